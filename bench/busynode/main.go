// Command busynode is the workload of bench/busynode.sh: a busy node's pods
// under a watched cgroup root, laid out as the kubelet's cgroupfs driver
// does (<dir>/pod<uid>/<64-hex container id>).
//
//	busynode node -dir <v2 dir> -pods 110 -out <file>
//
// makes the pods and runs them until SIGTERM or SIGINT, then stops them,
// removes their cgroups and writes what they did to -out:
//
//   - each of the -pods quiet pods has a container whose PID 1 (this
//     program, re-exec'd in the container's cgroup, as a runtime starts a
//     container's process) forks every -fork-every a child that runs
//     /bin/sh -c '/bin/true; exec /bin/sleep 0.1' (2 forks, 3 execs a tick);
//   - each quiet pod has an exec readiness probe every -probe-every: a
//     process entering the container's cgroup from outside its tree, as
//     runc exec does (this program in "join" mode writes its own pid to
//     cgroup.procs, then execs /bin/sh -c 'exec /bin/cat /proc/self/status':
//     1 fork, 3 execs, 2 of them in the container). The pods' probes and
//     ticks are staggered over their periods;
//   - one more pod's PID 1 sends SIGUSR1 to a child that handles it (both
//     in the container's cgroup), in a loop, as fast as it can.
//
// The other modes are the processes it starts: pod, pod-run, signals,
// signals-run, sink, join.
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// What one tick of a quiet pod's PID 1 and one probe are, as processes.
const (
	tickCmd       = "/bin/true; exec /bin/sleep 0.1"
	probeCmd      = "exec /bin/cat /proc/self/status"
	forksPerTick  = 2 // PID 1 -> sh, sh -> /bin/true
	execsPerTick  = 3 // sh, /bin/true, /bin/sleep
	forksPerProbe = 1 // the prober -> busynode join
	execsPerProbe = 3 // busynode join (outside), sh and /bin/cat (inside)
)

func main() {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, nil)).With("prog", "busynode"))
	if len(os.Args) < 2 {
		fail(errors.New("usage: busynode node|pod|pod-run|signals|signals-run|sink|join [flags]"))
	}
	mode, args := os.Args[1], os.Args[2:]
	var err error
	switch mode {
	case "node":
		err = node(args)
	case "pod", "signals":
		err = enter(mode, args)
	case "pod-run":
		err = podRun(args)
	case "signals-run":
		err = signalsRun()
	case "sink":
		err = sink()
	case "join":
		err = join(args)
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	slog.Error("failed", "err", err)
	os.Exit(1)
}

// joinCgroup moves this process into cgroup directory cg.
func joinCgroup(cg string) error {
	if err := os.WriteFile(filepath.Join(cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return fmt.Errorf("join cgroup %s: %w", cg, err)
	}
	return nil
}

// enter joins the cgroup given as the first argument and re-executes this
// program there as <mode>-run with the rest: a container's PID 1.
func enter(mode string, args []string) error {
	if len(args) < 1 {
		return fmt.Errorf("%s: no cgroup", mode)
	}
	if err := joinCgroup(args[0]); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("%s: %w", mode, err)
	}
	err = syscall.Exec(self, append([]string{self, mode + "-run"}, args[1:]...), os.Environ())
	return fmt.Errorf("%s: re-exec: %w", mode, err)
}

// join is a runtime's exec: into the cgroup, then the command.
func join(args []string) error {
	if len(args) < 2 {
		return errors.New("join: usage: join <cgroup> <program> [args]")
	}
	if err := joinCgroup(args[0]); err != nil {
		return err
	}
	err := syscall.Exec(args[1], args[1:], os.Environ())
	return fmt.Errorf("join: exec %s: %w", args[1], err)
}

// terminated is closed at SIGTERM or SIGINT.
func terminated() <-chan struct{} {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() { <-ch; close(done) }()
	return done
}

// podRun is a quiet pod's PID 1: a tick every period after delay, each
// fork+exec'ing tickCmd and waiting for it; at SIGTERM it prints
// "ticks <ok> <failed>".
func podRun(args []string) error {
	fs := flag.NewFlagSet("pod-run", flag.ContinueOnError)
	every := fs.Duration("every", 2*time.Second, "tick period")
	delay := fs.Duration("delay", 0, "first tick after")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("pod-run: %w", err)
	}
	done := terminated()
	attr := &syscall.ProcAttr{Env: []string{"PATH=/usr/bin:/bin"}, Files: []uintptr{0, 1, 2}}
	var ok, failed int
	select {
	case <-done:
	case <-time.After(*delay):
		t := time.NewTicker(*every)
		defer t.Stop()
	loop:
		for {
			pid, err := syscall.ForkExec("/bin/sh", []string{"/bin/sh", "-c", tickCmd}, attr)
			if err == nil {
				var ws syscall.WaitStatus
				_, err = syscall.Wait4(pid, &ws, 0, nil)
				if err == nil && (!ws.Exited() || ws.ExitStatus() != 0) {
					err = fmt.Errorf("tick: %v", ws)
				}
			}
			if err != nil {
				failed++
			} else {
				ok++
			}
			select {
			case <-done:
				break loop
			case <-t.C:
			}
		}
	}
	fmt.Printf("ticks %d %d\n", ok, failed)
	return nil
}

// signalsRun is the noisy pod's PID 1: it starts a sink child, then sends
// it SIGUSR1 in a loop until SIGTERM, and prints "signals <sent>".
func signalsRun() error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("signals: %w", err)
	}
	cmd := exec.Command(self, "sink")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("signals: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("signals: start sink: %w", err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // its handler is in place
		return fmt.Errorf("signals: sink not ready: %w", err)
	}
	var stop atomic.Bool
	go func() { <-terminated(); stop.Store(true) }()
	pid := cmd.Process.Pid
	var sent, failed uint64
	for !stop.Load() {
		if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
			failed++
			if failed > 1000 {
				return fmt.Errorf("signals: kill: %w", err)
			}
			continue
		}
		sent++
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	fmt.Printf("signals %d\n", sent)
	return nil
}

// sink handles SIGUSR1 (a handler, so each one is delivered) until SIGTERM.
func sink() error {
	ch := make(chan os.Signal, 1024)
	signal.Notify(ch, syscall.SIGUSR1)
	go func() {
		for range ch {
		}
	}()
	fmt.Println("ready")
	<-terminated()
	return nil
}

func newUID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func newCID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type pod struct {
	uid, dir, ctr string
	noisy         bool
	cmd           *exec.Cmd
	out           bytes.Buffer
	probesOK      atomic.Int64
	probesFailed  atomic.Int64
	ticks, tickFailed,
	signals int64
}

func node(args []string) error {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	dir := fs.String("dir", "", "the cgroup v2 directory the pods go in (exists)")
	n := fs.Int("pods", 110, "quiet pods")
	forkEvery := fs.Duration("fork-every", 2*time.Second, "each quiet pod's tick period")
	probeEvery := fs.Duration("probe-every", 10*time.Second, "each quiet pod's readiness probe period")
	outPath := fs.String("out", "", "where the results go (default stdout)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	if *dir == "" {
		return errors.New("node: -dir is required")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("node: %w", err)
	}
	done := terminated()
	pods := make([]*pod, *n+1)
	for i := range pods {
		p := &pod{uid: newUID(), noisy: i == *n}
		p.dir = filepath.Join(*dir, "pod"+p.uid)
		p.ctr = filepath.Join(p.dir, newCID())
		pods[i] = p
	}
	defer func() {
		for _, p := range pods {
			_ = os.Remove(p.ctr)
			_ = os.Remove(p.dir)
		}
	}()
	// The pods' PID 1s, each in its container's cgroup.
	for i, p := range pods {
		if err := os.MkdirAll(p.ctr, 0o755); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		if p.noisy {
			p.cmd = exec.Command(self, "signals", p.ctr)
		} else {
			delay := time.Duration(i) * *forkEvery / time.Duration(*n)
			p.cmd = exec.Command(self, "pod", p.ctr, "-every", forkEvery.String(), "-delay", delay.String())
		}
		p.cmd.Stdout, p.cmd.Stderr = &p.out, os.Stderr
		if err := p.cmd.Start(); err != nil {
			_ = stopPods(pods) // already failing: the first error is the one to tell
			return fmt.Errorf("node: start pod %s: %w", p.uid, err)
		}
	}
	start := time.Now()
	fmt.Fprintln(os.Stderr, "busynode: ready")
	slog.Info("pods running", "quiet", *n, "noisy", 1)

	// The probes: pod i's first at i/n of the period, then every period.
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		_ = stopPods(pods) // already failing: the first error is the one to tell
		return fmt.Errorf("node: %w", err)
	}
	defer devnull.Close()
	var wg sync.WaitGroup
	for i, p := range pods[:*n] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-done:
				return
			case <-time.After(time.Duration(i) * *probeEvery / time.Duration(*n)):
			}
			t := time.NewTicker(*probeEvery)
			defer t.Stop()
			for {
				c := exec.Command(self, "join", p.ctr, "/bin/sh", "-c", probeCmd)
				c.Stdout = devnull
				if err := c.Run(); err != nil {
					p.probesFailed.Add(1)
					slog.Warn("probe failed", "pod", p.uid, "err", err)
				} else {
					p.probesOK.Add(1)
				}
				select {
				case <-done:
					return
				case <-t.C:
				}
			}
		}()
	}
	<-done
	wg.Wait()
	elapsed := time.Since(start)
	if err := stopPods(pods); err != nil {
		return err
	}
	for _, p := range pods {
		if err := os.Remove(p.ctr); err != nil {
			return fmt.Errorf("node: %w", err)
		}
		if err := os.Remove(p.dir); err != nil {
			return fmt.Errorf("node: %w", err)
		}
	}
	return report(*outPath, pods, elapsed)
}

// stopPods ends every pod's PID 1 and reads what it printed.
func stopPods(pods []*pod) error {
	var errs []error
	for _, p := range pods {
		if p.cmd != nil && p.cmd.Process != nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range pods {
		if p.cmd == nil || p.cmd.Process == nil {
			continue
		}
		if err := p.cmd.Wait(); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", p.uid, err))
			continue
		}
		f := strings.Fields(p.out.String())
		switch {
		case len(f) == 3 && f[0] == "ticks":
			p.ticks, _ = strconv.ParseInt(f[1], 10, 64)
			p.tickFailed, _ = strconv.ParseInt(f[2], 10, 64)
		case len(f) == 2 && f[0] == "signals":
			p.signals, _ = strconv.ParseInt(f[1], 10, 64)
		default:
			errs = append(errs, fmt.Errorf("pod %s: unexpected output %q", p.uid, p.out.String()))
		}
	}
	return errors.Join(errs...)
}

// report writes one line a pod ("quiet <uid> <probes ok> <probes failed>
// <ticks> <ticks failed>", "noisy <uid> <signals>") and a last line
// "rates <seconds> <forks/s> <execs/s> <probes/s> <signals/s> <failures>".
func report(path string, pods []*pod, elapsed time.Duration) error {
	var b strings.Builder
	var ticks, probes, signals, failures int64
	for _, p := range pods {
		if p.noisy {
			fmt.Fprintf(&b, "noisy %s %d\n", p.uid, p.signals)
			signals += p.signals
			continue
		}
		ok, bad := p.probesOK.Load(), p.probesFailed.Load()
		fmt.Fprintf(&b, "quiet %s %d %d %d %d\n", p.uid, ok, bad, p.ticks, p.tickFailed)
		ticks += p.ticks
		probes += ok
		failures += bad + p.tickFailed
	}
	s := elapsed.Seconds()
	fmt.Fprintf(&b, "rates %.1f %.1f %.1f %.2f %.0f %d\n", s,
		float64(ticks*forksPerTick+probes*forksPerProbe)/s,
		float64(ticks*execsPerTick+probes*execsPerProbe)/s,
		float64(probes)/s, float64(signals)/s, failures)
	if path == "" {
		_, err := os.Stdout.WriteString(b.String())
		return err
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("node: %w", err)
	}
	return nil
}
