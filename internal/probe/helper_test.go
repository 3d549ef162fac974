//go:build linux

package probe

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// The test binary doubles as the helper programs the probe tests trigger
// events with: PODCHRON_HELPER=<mode> selects one (see runHelper).
const helperEnv = "PODCHRON_HELPER"

func init() {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode, os.Args[1:]))
	}
}

// spawnExit fork+execs the helper "exit n" and waits for it: its pid.
func spawnExit(n string) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	pid, err := syscall.ForkExec(self, []string{self, n}, &syscall.ProcAttr{Env: helperEnviron("exit"), Files: []uintptr{0, 1, 2}})
	if err != nil {
		return 0, err
	}
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, 0, nil)
	return pid, nil
}

// runHelper runs one helper mode and returns its exit code.
//
//	wait-exec MODE ARGS...  wait for a line on stdin, then exec MODE (so the
//	                        exec happens after the test moved us into a cgroup);
//	                        MODE may also be an absolute path to a program
//	exit N                  exit with status N
//	spawn N                 fork+exec a child "exit N" and wait for it
//	wait-spawn N            wait for a line on stdin, then spawn N (so the
//	                        fork happens in the cgroup the test moved us to,
//	                        without an exec there: a runtime's set-up)
//	spawn-hold N            spawn N, print the child's pid and "ready", then
//	                        sleep until killed (holding its cgroups)
//	storm N                 fork+exec N children "exit 0", one after the other
//	sleep                   sleep until killed
//	ignore-term             ignore SIGTERM, say "ready", sleep
//	handle-term             handle SIGTERM by exiting 0; say "ready" first
//	kill PID SIG            send SIG to PID
//	alloc MiB               allocate and touch MiB of memory
//	hold MiB                allocate and touch MiB of memory, say "ready",
//	                        sleep holding it
//	clone-parent PATH       clone a child with CLONE_PARENT (its parent is
//	                        ours, not us, as runc's set-up stages clone) that
//	                        execs PATH at once; print its pid, exit 0
//	spawn-moved DIR N [spawn]  fork+exec a child "wait-exec exit N" (or
//	                        "wait-spawn N": it forks, not execs, once moved),
//	                        print its pid, move it into the cgroup DIR
//	                        (absolute), then let it go on and wait for it
//	spawn-into DIR N        fork a child straight into the cgroup DIR
//	                        (clone3's CLONE_INTO_CGROUP) that execs "exit
//	                        N", print its pid and wait for it; or print
//	                        "unsupported: why" when the kernel or DIR
//	                        cannot (before 5.7, not cgroup v2)
//	orphan FIFO N           fork+exec a child "wait-exec exit N" reading the
//	                        FIFO, print its pid and "ready", exit 0 (the
//	                        child, orphaned, execs at the test's line)
//	signal-self N MS [handle]  ignore SIGUSR1 (or handle it), say "ready",
//	                        send it to itself N times (N 0: as fast as it
//	                        can for MS ms), then say "sent K"
func runHelper(mode string, args []string) int {
	switch mode {
	case "wait-exec":
		sayUp()
		return helperWaitExec(args)
	case "exit":
		n, _ := strconv.Atoi(args[0])
		return n
	case "wait-spawn":
		sayUp()
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			fmt.Fprintln(os.Stderr, "wait-spawn:", err)
			return 90
		}
		return runHelper("spawn", args)
	case "spawn":
		if _, err := spawnExit(args[0]); err != nil {
			return 92
		}
		return 0
	case "spawn-hold":
		pid, err := spawnExit(args[0])
		if err != nil {
			return 92
		}
		fmt.Println(pid)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "storm":
		n, _ := strconv.Atoi(args[0])
		return storm(n)
	case "spawn-moved":
		return helperSpawnMoved(args[0], args[1], len(args) > 2 && args[2] == "spawn")
	case "spawn-into":
		return helperSpawnInto(args[0], args[1])
	case "orphan":
		self, _ := os.Executable()
		// The test's FIFO for its stdin (the test writes the line once
		// we are gone), and not our stdout, which the test reads to its
		// end.
		fifo, err := os.OpenFile(args[0], os.O_RDWR, 0)
		if err != nil {
			return 92
		}
		null, err := os.Open(os.DevNull)
		if err != nil {
			return 92
		}
		pid, err := syscall.ForkExec(self, []string{self, "exit", args[1]},
			&syscall.ProcAttr{Env: helperEnviron("wait-exec"), Files: []uintptr{fifo.Fd(), null.Fd(), 2}})
		if err != nil {
			return 92
		}
		fmt.Println(pid)
		fmt.Println("ready")
		return 0
	case "clone-parent":
		return helperCloneParent(args[0])
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("ready")
		time.Sleep(time.Hour)
		return 0
	case "handle-term":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGTERM)
		fmt.Println("ready")
		<-c
		return 0
	case "kill":
		pid, _ := strconv.Atoi(args[0])
		sig, _ := strconv.Atoi(args[1])
		if err := syscall.Kill(pid, syscall.Signal(sig)); err != nil {
			return 93
		}
		return 0
	case "signal-self":
		n, _ := strconv.Atoi(args[0])
		ms, _ := strconv.Atoi(args[1])
		return signalSelf(n, time.Duration(ms)*time.Millisecond, len(args) > 2 && args[2] == "handle")
	case "alloc":
		mib, _ := strconv.Atoi(args[0])
		return helperAlloc(mib)
	case "hold":
		mib, _ := strconv.Atoi(args[0])
		held := touched(mib)
		// A collection now, not while the test's other process fills
		// the cgroup: this one must not be the task that hits the limit.
		runtime.GC()
		fmt.Println("ready")
		time.Sleep(time.Hour)
		// KeepAlive, not len(held): the compiler keeps only the length
		// of a slice read for its length, so the chunks were garbage at
		// the collection above and Go's scavenger handed them back to
		// the kernel while the test waited (go1.26.8: 0 MiB in the heap
		// after the GC; on 6.12.118 in qemu the RSS once fell from 44 to
		// 8.5 MB within 2 s). The cgroup then had room for the
		// allocator and no OOM came (TestOOMKillOfABystander, CI
		// 2026-12-06).
		runtime.KeepAlive(held)
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
	return 99
}

// helperWaitExec waits for a line on stdin, then execs args[0] (a program,
// or this binary in that mode) with args[1:].
func helperWaitExec(args []string) int {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "wait-exec:", err)
		return 90
	}
	self, _ := os.Executable()
	env := helperEnviron(args[0])
	if strings.HasPrefix(args[0], "/") { // a program, not a mode
		self, env = args[0], os.Environ()
	}
	if err := syscall.Exec(self, append([]string{self}, args[1:]...), env); err != nil {
		fmt.Fprintln(os.Stderr, "exec:", err)
	}
	return 91
}

// helperSpawnMoved forks a child that waits to exec "exit n" (or, with
// spawn, to fork a child that does), moves it into the cgroup dir, then
// lets it go on and waits for it.
func helperSpawnMoved(dir, n string, spawn bool) int {
	r, w, err := os.Pipe()
	if err != nil {
		return 92
	}
	up, upW, err := os.Pipe()
	if err != nil {
		return 92
	}
	self, _ := os.Executable()
	argv, env := []string{self, "exit", n}, helperEnviron("wait-exec")
	if spawn {
		argv, env = []string{self, n}, helperEnviron("wait-spawn")
	}
	env = append(env, helperUpEnv+"=1")
	pid, err := syscall.ForkExec(self, argv, &syscall.ProcAttr{Env: env, Files: []uintptr{r.Fd(), 1, 2, upW.Fd()}})
	if err != nil {
		return 92
	}
	r.Close()
	upW.Close()
	fmt.Println(pid)
	// ForkExec returns once the exec closed the child's close-on-exec
	// pipe, before the kernel's exec tracepoint: moved now, the child
	// could be seen exec'ing in dir (a root there, what it forks below
	// it: 2026-11-29's CI, on 5.10 under TCG). Its word from its own code
	// comes after the tracepoint.
	if _, err := up.Read(make([]byte, 1)); err != nil {
		fmt.Fprintln(os.Stderr, "spawn-moved: the child never said it runs:", err)
		return 95
	}
	up.Close()
	if err := moveProcess(dir, pid); err != nil {
		fmt.Fprintln(os.Stderr, "spawn-moved:", err)
		return 95
	}
	if _, err := w.WriteString("go\n"); err != nil {
		return 96
	}
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, 0, nil)
	return 0
}

// helperSpawnInto forks a child straight into the cgroup dir (clone3's
// CLONE_INTO_CGROUP, Go's UseCgroupFD) that execs "exit n", and waits for
// it; it says "unsupported" where the kernel or dir cannot.
func helperSpawnInto(dir, n string) int {
	cg, err := os.Open(dir)
	if err != nil {
		return 92
	}
	defer cg.Close()
	self, _ := os.Executable()
	pid, err := syscall.ForkExec(self, []string{self, n}, &syscall.ProcAttr{
		Env: helperEnviron("exit"), Files: []uintptr{0, 1, 2},
		Sys: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: int(cg.Fd())},
	})
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.E2BIG) || errors.Is(err, syscall.EBADF) {
		fmt.Println("unsupported:", err)
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "spawn-into:", err)
		return 92
	}
	fmt.Println(pid)
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, 0, nil)
	return 0
}

// helperCloneParent clones a child with CLONE_PARENT that execs path at
// once, and prints its pid. The child runs only raw system calls on a copy
// of this thread's stack (as syscall.forkAndExecInChild does): everything
// it needs is made before the clone.
func helperCloneParent(path string) int {
	argv0, err := syscall.BytePtrFromString(path)
	if err != nil {
		return 93
	}
	argv, err := syscall.SlicePtrFromStrings([]string{path})
	if err != nil {
		return 93
	}
	envv, err := syscall.SlicePtrFromStrings(nil)
	if err != nil {
		return 93
	}
	runtime.LockOSThread()
	pid, _, errno := syscall.RawSyscall6(syscall.SYS_CLONE, syscall.CLONE_PARENT|uintptr(syscall.SIGCHLD), 0, 0, 0, 0, 0)
	if errno != 0 {
		fmt.Fprintln(os.Stderr, "clone:", errno)
		return 94
	}
	if pid == 0 {
		_, _, _ = syscall.RawSyscall(syscall.SYS_EXECVE, uintptr(unsafe.Pointer(argv0)), uintptr(unsafe.Pointer(&argv[0])), uintptr(unsafe.Pointer(&envv[0])))
		_, _, _ = syscall.RawSyscall(syscall.SYS_EXIT, 127, 0, 0)
	}
	fmt.Println(pid)
	return 0
}

// helperAlloc touches mib MiB of memory.
func helperAlloc(mib int) int {
	return len(touched(mib)) % 2 // keeps the chunks live; never reached under a limit
}

// touched allocates mib MiB and touches every page.
func touched(mib int) [][]byte {
	var chunks [][]byte
	for i := 0; i < mib; i++ {
		b := make([]byte, 1<<20)
		for j := 0; j < len(b); j += 4096 {
			b[j] = 1
		}
		chunks = append(chunks, b)
	}
	return chunks
}

// helperEnviron is this process's environment with the helper mode replaced.
// helperUpEnv, set in a helper's environment, makes its wait-exec or
// wait-spawn mode write a byte to fd 3 as it starts (sayUp).
const helperUpEnv = "PODCHRON_HELPER_UP_FD3"

// sayUp writes a byte to fd 3 when the parent asked (helperUpEnv): this
// process runs its own code, so its exec, tracepoint included, is over.
// Without the variable fd 3 may be the runtime's own and is left alone.
func sayUp() {
	if os.Getenv(helperUpEnv) == "" {
		return
	}
	f := os.NewFile(3, "up")
	_, _ = f.Write([]byte{'u'})
	_ = f.Close()
}

func helperEnviron(mode string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, helperEnv+"=") && !strings.HasPrefix(kv, helperUpEnv+"=") {
			env = append(env, kv)
		}
	}
	return append(env, helperEnv+"="+mode)
}

// signalSelf sends SIGUSR1 (ignored, or handled) to this process n times,
// or for d if n is 0, and reports how many it sent.
func signalSelf(n int, d time.Duration, handle bool) int {
	if handle {
		// Go's handler takes each delivery; what the full channel cannot
		// take it drops.
		signal.Notify(make(chan os.Signal, 1), syscall.SIGUSR1)
	} else {
		signal.Ignore(syscall.SIGUSR1)
	}
	fmt.Println("ready")
	pid, sent := os.Getpid(), 0
	deadline := time.Now().Add(d)
	for n == 0 || sent < n {
		if n == 0 && sent%1024 == 0 && time.Now().After(deadline) {
			break
		}
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			return 95
		}
		sent++
	}
	fmt.Println("sent", sent)
	return 0
}

// storm forks and execs n children "exit 0", one after the other.
func storm(n int) int {
	self, _ := os.Executable()
	env := helperEnviron("exit")
	for i := 0; i < n; i++ {
		pid, err := syscall.ForkExec(self, []string{self, "0"}, &syscall.ProcAttr{Env: env, Files: []uintptr{0, 1, 2}})
		if err != nil {
			return 94
		}
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, 0, nil)
	}
	return 0
}
