//go:build linux

package probe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/cgroupfs"
	"github.com/podchron/podchron/test/harness/nested"
)

// These tests load the real probes into the running kernel, start real helper
// processes (this test binary, see helper_test.go) in a dedicated cgroup under
// a watched root, and match the events they cause, in any order.

const waitTimeout = 10 * time.Second

var testSeq atomic.Int32

func requireProbes(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("loading BPF programs needs root")
	}
	if err := Preflight(); err != nil {
		if (errors.Is(err, ErrNoBTF) || errors.Is(err, ErrKernelTooOld)) && os.Getenv("PODCHRON_VM") == "" {
			t.Skipf("kernel cannot run the probes: %v", err)
		}
		t.Fatalf("preflight: %v", err)
	}
}

type collector struct {
	mu     sync.Mutex
	events []kernel.Event
	notify chan struct{}
}

func (c *collector) add(ev kernel.Event) {
	c.mu.Lock()
	c.events = append(c.events, ev)
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

func (c *collector) find(pred func(kernel.Event) bool) kernel.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range c.events {
		if pred(ev) {
			return ev
		}
	}
	return nil
}

func (c *collector) all(pred func(kernel.Event) bool) []kernel.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []kernel.Event
	for _, ev := range c.events {
		if pred(ev) {
			out = append(out, ev)
		}
	}
	return out
}

func (c *collector) dump(t *testing.T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("%d events seen:", len(c.events))
	for _, ev := range c.events {
		t.Log("  " + kernel.Format(ev))
	}
}

// wait returns the first event matching pred, failing the test after a timeout.
func wait[T kernel.Event](t *testing.T, c *collector, desc string, pred func(T) bool) T {
	t.Helper()
	match := func(ev kernel.Event) bool {
		e, ok := ev.(T)
		return ok && pred(e)
	}
	deadline := time.After(waitTimeout)
	for {
		if ev := c.find(match); ev != nil {
			return ev.(T)
		}
		select {
		case <-c.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			c.dump(t)
			t.Fatalf("no %s event within %s", desc, waitTimeout)
		}
	}
}

type env struct {
	p      *Probes
	layout cgroupfs.Layout
	root   string // watched root, relative to the hierarchy
	col    *collector
	self   string
}

type option func(*Config)

// Loading the programs is slow where verification is (9-16 s per load in a
// TCG guest), so the tests that run with the default settings share one
// load, watching one root; each test gets its own collector, fed every event
// read while it runs, and its own child cgroups. Tests that need other
// settings (a tiny ring buffer, v1 mode) load their own.
var shared struct {
	once   sync.Once
	err    error
	p      *Probes
	layout cgroupfs.Layout
	root   string
	self   string
	stop   func()

	mu   sync.Mutex
	cols map[*collector]bool
}

func TestMain(m *testing.M) {
	// Run by TestNestedNode inside a node's namespaces: see the node's
	// cgroup hierarchies first, as a kind node's processes do.
	if nested.Inside() {
		if err := nested.SetUp(); err != nil {
			fmt.Fprintln(os.Stderr, "probe tests:", err)
			os.Exit(2)
		}
	}
	code := m.Run()
	if shared.stop != nil {
		shared.stop()
	}
	os.Exit(code)
}

func loadShared() error {
	root := fmt.Sprintf("/podchron-test-%d", os.Getpid())
	cfg := DefaultConfig()
	cfg.PollInterval = 20 * time.Millisecond
	cfg.CgroupRoots = []string{root}
	layout, err := cgroupfs.Detect(cfg.CgroupMode)
	if err != nil {
		return err
	}
	if err := os.Mkdir(layout.Path(root), 0o755); err != nil {
		return fmt.Errorf("create cgroup: %w", err)
	}
	start := time.Now()
	p, err := Load(cfg)
	if err != nil {
		_ = unix.Rmdir(layout.Path(root))
		return fmt.Errorf("load probes: %w", err)
	}
	fmt.Fprintf(os.Stderr, "probe tests: shared probes loaded in %s\n", time.Since(start).Round(10*time.Millisecond))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	src, err := p.NewSource()
	if err != nil {
		p.Close()
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := src.Next(ctx)
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
					fmt.Fprintf(os.Stderr, "probe tests: read events: %v\n", err)
				}
				return
			}
			shared.mu.Lock()
			for c := range shared.cols {
				c.add(ev)
			}
			shared.mu.Unlock()
		}
	}()
	shared.p, shared.layout, shared.root, shared.self = p, layout, root, self
	shared.cols = map[*collector]bool{}
	shared.stop = func() {
		cancel()
		<-done
		src.Close()
		p.Close()
		rmCgroup(nil, layout.Path(root))
	}
	return nil
}

// setup returns probes watching a root cgroup with a fresh event collector:
// the shared load without options, a load of its own with them.
func setup(t *testing.T, opts ...option) *env {
	t.Helper()
	requireProbes(t)
	if len(opts) > 0 {
		return setupOwn(t, opts...)
	}
	shared.once.Do(func() { shared.err = loadShared() })
	if shared.err != nil {
		t.Fatalf("shared probes: %v", shared.err)
	}
	e := &env{p: shared.p, layout: shared.layout, root: shared.root, col: &collector{notify: make(chan struct{}, 1)}, self: shared.self}
	shared.mu.Lock()
	shared.cols[e.col] = true
	shared.mu.Unlock()
	t.Cleanup(func() {
		shared.mu.Lock()
		delete(shared.cols, e.col)
		shared.mu.Unlock()
	})
	return e
}

// setupOwn creates a watched root cgroup, loads the probes with opts applied
// and collects events.
func setupOwn(t *testing.T, opts ...option) *env {
	t.Helper()
	root := fmt.Sprintf("/podchron-test-%d-%d", os.Getpid(), testSeq.Add(1))
	cfg := DefaultConfig()
	cfg.PollInterval = 20 * time.Millisecond
	cfg.CgroupRoots = []string{root}
	for _, o := range opts {
		o(&cfg)
	}
	layout, err := cgroupfs.Detect(cfg.CgroupMode)
	if err != nil {
		t.Skipf("cgroups: %v", err)
	}
	mkCgroup(t, layout.Path(root))
	p, err := Load(cfg)
	if err != nil {
		t.Fatalf("load probes: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &env{p: p, layout: layout, root: root, col: &collector{notify: make(chan struct{}, 1)}, self: self}
	src, err := p.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			ev, err := src.Next(ctx)
			if err != nil {
				if !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
					t.Errorf("read events: %v", err)
				}
				return
			}
			e.col.add(ev)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		src.Close()
	})
	return e
}

// mkCgroup creates a cgroup directory, removed (with its children) at cleanup.
func mkCgroup(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create cgroup: %v", err)
	}
	t.Cleanup(func() { rmCgroup(t, dir) })
}

func rmCgroup(t *testing.T, dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			rmCgroup(t, filepath.Join(dir, e.Name()))
		}
	}
	// Processes may still be leaving the cgroup.
	for i := 0; i < 100; i++ {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	if t != nil {
		t.Logf("could not remove cgroup %s", dir)
	}
}

// cgroup makes a child of the watched root and returns its path relative
// to the hierarchy. The name is made unique per test (the root is shared).
func (e *env) cgroup(t *testing.T, name string) string {
	rel := fmt.Sprintf("%s/%s-%d", e.root, name, testSeq.Add(1))
	mkCgroup(t, e.layout.Path(rel))
	return rel
}

type helper struct {
	cmd   *exec.Cmd
	pid   uint32
	ready chan struct{} // closed when the helper printed "ready"
	done  chan struct{}
	err   error
	lines []string // what it printed, complete once done is closed
}

// start runs a helper mode inside the cgroup dirs (absolute paths): the
// process is moved there first and only then execs the mode.
func (e *env) start(t *testing.T, dirs []string, mode string, args ...string) *helper {
	t.Helper()
	cmd := exec.Command(e.self, append([]string{mode}, args...)...)
	cmd.Env = helperEnviron("wait-exec")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helper{cmd: cmd, pid: uint32(cmd.Process.Pid), ready: make(chan struct{}), done: make(chan struct{})}
	// The reader below closes done once the helper is reaped; it starts
	// only once the helper is in place. Until then, a failure reaps it here
	// (the cleanup must not wait for a reader that never started).
	started := false
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if !started {
			_ = cmd.Wait()
			return
		}
		<-h.done
	})
	waitExeced(t, cmd.Process.Pid)
	for _, d := range dirs {
		if err := moveProcess(d, cmd.Process.Pid); err != nil {
			t.Fatalf("move helper (pid %d, %s) into %s: %v", cmd.Process.Pid, procState(cmd.Process.Pid), d, err)
		}
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	started = true
	go func() {
		defer close(h.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			h.lines = append(h.lines, sc.Text())
			if sc.Text() == "ready" {
				close(h.ready)
			}
		}
		h.err = cmd.Wait()
	}()
	return h
}

// moveProcess moves pid into the cgroup dir. The cpu controller refuses
// (EINVAL) to move a process while one of its threads is being created
// (TASK_NEW, cpu_cgroup_can_attach; seen on 5.10 with the Go runtime
// starting threads): that passes, so the move is tried again.
func moveProcess(dir string, pid int) error {
	var err error
	for range 100 {
		err = os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
		if !errors.Is(err, unix.EINVAL) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("still refused after 100 tries: %w", err)
}

// procState is what /proc says of pid (its state, threads and cgroups),
// for a failure's message.
func procState(pid int) string {
	var parts []string
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "State:") || strings.HasPrefix(l, "Threads:") {
				parts = append(parts, strings.Join(strings.Fields(l), " "))
			}
		}
	} else {
		parts = append(parts, err.Error())
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil {
		parts = append(parts, "cgroup "+strings.Join(strings.Fields(string(b)), " "))
	}
	return strings.Join(parts, "; ")
}

// waitExeced waits until a helper started by exec.Cmd has finished its
// exec: Start returns when the exec closed the child's close-on-exec pipe,
// before the kernel's sched_process_exec, so a helper moved into a watched
// cgroup at once could be seen exec'ing there. The helpers are Go programs:
// a second thread means the new program runs.
func waitExeced(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		if tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid)); err != nil || len(tasks) > 1 {
			return // gone (the test will say), or running
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("helper %d: not running after %s", pid, waitTimeout)
}

func (h *helper) waitReady(t *testing.T) {
	t.Helper()
	select {
	case <-h.ready:
	case <-h.done:
		t.Fatalf("helper %d exited before it was ready: %v", h.pid, h.err)
	case <-time.After(waitTimeout):
		t.Fatalf("helper %d not ready", h.pid)
	}
}

// childPID is the pid the helper printed on its first line (the modes
// that fork one say it first); it is read once the helper is done or ready.
func (h *helper) childPID(t *testing.T) int {
	t.Helper()
	if len(h.lines) == 0 {
		t.Fatalf("the helper printed no child pid (%v)", h.err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(h.lines[0]))
	if err != nil {
		t.Fatalf("child pid %q: %v", h.lines[0], err)
	}
	return pid
}

func (h *helper) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.done:
	case <-time.After(waitTimeout):
		t.Fatalf("helper %d did not exit", h.pid)
	}
}

func (e *env) dir(rel string) string { return e.layout.Path(rel) }

func cgid(t *testing.T, dir string) uint64 {
	t.Helper()
	id, err := cgroupfs.DirID(dir)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestEveryProgramLoadsAndAttaches(t *testing.T) {
	e := setup(t)
	progs := e.p.Programs()
	if len(progs) != 8 {
		t.Fatalf("want 8 programs, got %d", len(progs))
	}
	for name, prog := range progs {
		info, err := prog.Info()
		if err != nil {
			t.Fatalf("%s: info: %v", name, err)
		}
		if !strings.HasPrefix("handle_"+name, info.Name) && !strings.HasPrefix(info.Name, "handle_") {
			t.Errorf("%s: unexpected kernel name %q", name, info.Name)
		}
		t.Logf("%-15s loaded as %q (%s)", name, info.Name, prog.Type())
	}
	if len(e.p.links) != 8 {
		t.Fatalf("want 8 attached links, got %d", len(e.p.links))
	}
}

// maxVerifiedInsns bounds the verifier's work per program. The verifier
// restarts a load from scratch whenever a signal reaches the loading thread
// (EAGAIN, which the loader retries), so a program that takes it long to
// verify can be restarted forever on a busy process: the CNI environment
// scan once cost 434,419 instructions (a second) and hung a test under CPU
// load with child processes exiting. Every program now takes a few thousand.
const maxVerifiedInsns = 50_000

func TestEveryProgramIsCheapToVerify(t *testing.T) {
	e := setup(t)
	for name, prog := range e.p.Programs() {
		info, err := prog.Info()
		if err != nil {
			t.Fatalf("%s: info: %v", name, err)
		}
		n, ok := info.VerifiedInstructions()
		if !ok {
			t.Skipf("the kernel does not report verified instructions (Linux 5.16+): %s", name)
		}
		t.Logf("%-15s %6d instructions verified", name, n)
		if n > maxVerifiedInsns {
			t.Errorf("%s: the verifier processed %d instructions, more than %d", name, n, maxVerifiedInsns)
		}
	}
}

// allProcesses: every process of a watched cgroup, not only its process
// tree's roots.
func allProcesses(c *Config) { c.AllProcesses = true }

// With --all-processes every fork, exec and exit in a watched cgroup is
// reported, a container's own children's too.
func TestExecForkExit(t *testing.T) {
	e := setup(t, allProcesses)
	dir := e.dir(e.cgroup(t, "work"))
	h := e.start(t, []string{dir}, "spawn", "3")
	h.wait(t)
	id := cgid(t, dir)

	exe := wait(t, e.col, "exec of the helper", func(ev *kernel.ExecEvent) bool { return ev.TGID == h.pid })
	if exe.Filename != e.self || !slices.Equal(exe.Args, []string{e.self, "3"}) {
		t.Errorf("exec: filename %q args %q, want %q [%q 3]", exe.Filename, exe.Args, e.self, e.self)
	}
	if exe.CgroupID != id || exe.Origin&kernel.OriginWatched == 0 || exe.Comm != truncComm(filepath.Base(e.self)) {
		t.Errorf("exec: cgroup %d origin %s comm %q; want cgroup %d, watched", exe.CgroupID, exe.Origin, exe.Comm, id)
	}
	if exe.PPID != uint32(os.Getpid()) {
		t.Errorf("exec: ppid %d, want %d", exe.PPID, os.Getpid())
	}
	if exe.Time.IsZero() || time.Since(exe.Time) > time.Minute || time.Since(exe.Time) < 0 {
		t.Errorf("exec: wall time %v is not now", exe.Time)
	}
	fork := wait(t, e.col, "fork", func(ev *kernel.ForkEvent) bool { return ev.TGID == h.pid })
	child := fork.ChildTGID
	if child == 0 || child == h.pid || fork.CgroupID != id {
		t.Errorf("fork: %+v", fork)
	}
	cexe := wait(t, e.col, "exec of the child", func(ev *kernel.ExecEvent) bool { return ev.TGID == child })
	if cexe.PPID != h.pid || !slices.Equal(cexe.Args, []string{e.self, "3"}) {
		t.Errorf("child exec: ppid %d args %q", cexe.PPID, cexe.Args)
	}
	cexit := wait(t, e.col, "exit of the child", func(ev *kernel.ExitEvent) bool { return ev.TGID == child })
	if cexit.ExitCode != 3 || cexit.Signal != 0 || cexit.CoreDumped || cexit.CgroupID != id {
		t.Errorf("child exit: code %d signal %v core %v cgroup %d; want 3, none", cexit.ExitCode, cexit.Signal, cexit.CoreDumped, cexit.CgroupID)
	}
	if !cexit.Start.Before(cexit.Time) {
		t.Errorf("child exit: start %v not before exit %v", cexit.Start, cexit.Time)
	}
	hexit := wait(t, e.col, "exit of the helper", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	if hexit.ExitCode != 0 || hexit.Signal != 0 {
		t.Errorf("helper exit: %+v", hexit)
	}
	if cexit.NSInit || hexit.NSInit {
		t.Errorf("exits in the host's pid namespace marked as a namespace's init: child %v helper %v", cexit.NSInit, hexit.NSInit)
	}
}

// startIn starts the helper in mode with args, moves it into the cgroup
// dir, and returns it with its stdin (the wait-* modes go on at a line).
func (e *env) startIn(t *testing.T, dir, mode string, args ...string) (*exec.Cmd, io.Writer) {
	t.Helper()
	cmd, stdin := startHelper(t, e.self, mode, args...)
	if err := moveProcess(dir, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin
}

// startHelper starts the test binary bin as the helper in mode with args,
// where it is (killed at cleanup), and returns it with its stdin.
func startHelper(t *testing.T, bin, mode string, args ...string) (*exec.Cmd, io.Writer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = helperEnviron(mode)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitExeced(t, cmd.Process.Pid)
	return cmd, stdin
}

// A process cloned with CLONE_PARENT by an exec'd root has the root's
// parent, outside the cgroup, for its own: its exec is a root's, as the
// exec of runc's stage-2 child (the container's init) is. CI missed one on
// 2026-11-28 (a shared-pid-namespace pod's init, e2e 12), when the fork
// below the exec'd runc init marked the child "below a root" from the
// forker alone.
func TestCloneParentChildOfARootIsARoot(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "cloneparent"))
	h := e.start(t, []string{dir}, "clone-parent", "/bin/true")
	h.wait(t)
	wait(t, e.col, "exec of the cloning root", func(ev *kernel.ExecEvent) bool { return ev.TGID == h.pid })
	child := h.childPID(t)
	ex := wait(t, e.col, "exec of the CLONE_PARENT child (its parent is outside the cgroup)", func(ev *kernel.ExecEvent) bool {
		return ev.TGID == uint32(child)
	})
	if ex.Origin&kernel.OriginWatched == 0 || ex.PPID == h.pid {
		t.Errorf("child's exec: origin %s, ppid %d (the root is %d): want watched, with the root's parent", ex.Origin, ex.PPID, h.pid)
	}
}

// By default only the roots of a watched cgroup's process tree are
// reported: a process entering from outside (its exec and exit), not what
// it forks and execs there.
func TestOnlyProcessTreeRootsByDefault(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "roots"))
	h := e.spawnRoot(t, dir)
	for _, ev := range e.col.all(func(kernel.Event) bool { return true }) {
		switch ev := ev.(type) {
		case *kernel.ForkEvent:
			if ev.TGID == h.pid {
				t.Errorf("fork below a root reported: %+v", ev)
			}
		case *kernel.ExecEvent:
			if ev.PPID == h.pid {
				t.Errorf("exec below a root reported: %+v", ev)
			}
		}
	}
}

// spawnRoot runs a helper in the cgroup dir that forks a child ("exit 3")
// and waits for it, waits for the helper's exec and exit to be reported (a
// root's), and for what other CPUs submitted; the events are then in e.col.
func (e *env) spawnRoot(t *testing.T, dir string) *helper {
	t.Helper()
	h := e.start(t, []string{dir}, "spawn", "3")
	h.wait(t)
	wait(t, e.col, "exec of the helper", func(ev *kernel.ExecEvent) bool { return ev.TGID == h.pid })
	wait(t, e.col, "exit of the helper", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	time.Sleep(200 * time.Millisecond) // what other CPUs submitted is read too
	return h
}

// The tracer's own process (Config.SelfTGID) is never reported, nor the
// fork it makes: the hot fronts leave that check to the programs' rests, so
// it holds only as long as each rest asks it. A helper started before the
// load stands in for the tracer (in a watched cgroup, as the DaemonSet's
// pod is); a second one, started the same way in the same cgroup, is
// reported, so the collector would have seen the first.
func TestTracerItselfIsNotReported(t *testing.T) {
	requireProbes(t)
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tracer, stdin := startHelper(t, bin, "wait-exec", "spawn", "3")
	self := uint32(tracer.Process.Pid)

	e := setup(t, func(c *Config) { c.SelfTGID = int(self) })
	dir := e.dir(e.cgroup(t, "self"))
	if err := moveProcess(dir, tracer.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil { // it execs "spawn 3": a fork, the child's exec and exit
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tracer.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the stand-in tracer: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("the stand-in tracer did not exit")
	}

	e.spawnRoot(t, dir)
	for _, ev := range e.col.all(func(kernel.Event) bool { return true }) {
		switch ev := ev.(type) {
		case *kernel.ExecEvent:
			if ev.TGID == self || ev.PPID == self {
				t.Errorf("the tracer's exec, or its child's, reported: %+v", ev)
			}
		case *kernel.ForkEvent:
			if ev.TGID == self {
				t.Errorf("the tracer's fork reported: %+v", ev)
			}
		case *kernel.ExitEvent:
			if ev.TGID == self {
				t.Errorf("the tracer's exit reported: %+v", ev)
			}
		}
	}
}

// A process forked below a root and then moved into another watched cgroup
// (a nested runtime's init joining its container's cgroup, or an exec
// session entered from a privileged pod) enters that cgroup from outside:
// its exec there is a root's, though its fork marked it below a root in the
// cgroup it was forked in.
func TestMovedProcessIsARoot(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "forked-in"))
	other := e.dir(e.cgroup(t, "moved-to"))
	h := e.start(t, []string{dir}, "spawn-moved", other, "4")
	h.wait(t)
	wantRootIn(t, e, h, other, "moved child", 4)
}

// wantRootIn asserts that the child helper h printed exec'd in the watched
// cgroup dir as a root (watched origin, h its parent) and exited there with
// code.
func wantRootIn(t *testing.T, e *env, h *helper, dir, what string, code int) {
	t.Helper()
	child := h.childPID(t)
	id := cgid(t, dir)
	ex := wait(t, e.col, "exec of the "+what+" in its cgroup", func(ev *kernel.ExecEvent) bool {
		return ev.TGID == uint32(child) && ev.CgroupID == id
	})
	if ex.Origin&kernel.OriginWatched == 0 || ex.PPID != h.pid {
		t.Errorf("%s's exec: origin %s ppid %d; want watched, the root %d", what, ex.Origin, ex.PPID, h.pid)
	}
	if x := wait(t, e.col, "exit of the "+what, func(ev *kernel.ExitEvent) bool { return ev.TGID == uint32(child) }); x.ExitCode != code || x.CgroupID != id {
		t.Errorf("%s's exit: code %d cgroup %d; want %d, %d", what, x.ExitCode, x.CgroupID, code, id)
	}
}

// A child cloned straight into another watched cgroup (clone3's
// CLONE_INTO_CGROUP: crun's and runc 1.4+'s exec sessions on cgroup v2,
// opencontainers/runc#4812; systemd's units) enters it at its fork, not by
// a move: it is a root there, though its forker is an exec'd root
// elsewhere. Its fork marked it below a root before (in its own new
// css_set, where the mark held), and its exec was hidden: only where the
// forker is itself in a watched cgroup, as a runtime nested in a pod (a
// kind node, a CI runner), since a node's own runtime runs outside them.
func TestClonedIntoCgroupIsARoot(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "forked-in"))
	other := e.dir(e.cgroup(t, "cloned-into"))
	h := e.start(t, []string{dir}, "spawn-into", other, "6")
	h.wait(t)
	if len(h.lines) > 0 && strings.HasPrefix(h.lines[0], "unsupported:") {
		t.Skipf("clone3 CLONE_INTO_CGROUP into %s: %s (Linux 5.7+, cgroup v2)", other, h.lines[0])
	}
	wantRootIn(t, e, h, other, "cloned child", 6)
}

// A process forked below a root and moved into another watched cgroup
// without exec'ing there (a nested runtime's "runc init") is that cgroup's
// runtime set-up: what it forks is a root, though its own mark, made in the
// cgroup it left, says it is below one.
func TestMovedProcessForksRoots(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "forked-in"))
	other := e.dir(e.cgroup(t, "set-up-in"))
	h := e.start(t, []string{dir}, "spawn-moved", other, "5", "spawn")
	h.wait(t)
	setup := h.childPID(t)
	id := cgid(t, other)
	fork := wait(t, e.col, "fork of the moved process", func(ev *kernel.ForkEvent) bool {
		return ev.TGID == uint32(setup) && ev.CgroupID == id
	})
	child := fork.ChildTGID
	ex := wait(t, e.col, "exec of what it forked", func(ev *kernel.ExecEvent) bool { return ev.TGID == child })
	if ex.Origin&kernel.OriginWatched == 0 || ex.CgroupID != id || ex.PPID != uint32(setup) {
		t.Errorf("exec: origin %s cgroup %d ppid %d; want watched, %d, %d", ex.Origin, ex.CgroupID, ex.PPID, id, setup)
	}
	if x := wait(t, e.col, "exit of what it forked", func(ev *kernel.ExitEvent) bool { return ev.TGID == child }); x.ExitCode != 5 {
		t.Errorf("exit code %d, want 5", x.ExitCode)
	}
}

// An orphan stays below the root it was forked below, though the kernel
// gives it a parent outside its cgroup (the subreaper or init: in a pod
// sharing its pid namespace, the pause process): a daemon a container
// starts is the container's, not a process entering it. Its exec and exit
// are not the tree's roots'.
func TestOrphanStaysBelowItsRoot(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "orphan"))
	fifo := filepath.Join(t.TempDir(), "go")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	h := e.start(t, []string{dir}, "orphan", fifo, "6")
	select {
	case <-h.ready: // its one line before is the child's pid
	case <-time.After(10 * time.Second):
		t.Fatal("the root never said ready")
	}
	wait(t, e.col, "exit of the root", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	child := h.childPID(t)
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	// Reparented once its parent is gone: to a process outside the cgroup.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", child))
		if err != nil {
			t.Fatalf("the orphan %d: %v", child, err)
		}
		if !strings.Contains(string(st), fmt.Sprintf("\nPPid:\t%d\n", h.pid)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan %d is still the root's child", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(fifo, []byte("go\n"), 0); err != nil { // the orphan execs "exit 6"
		t.Fatal(err)
	}
	for { // gone, or a zombie its new parent has not reaped yet
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", child))
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the orphan %d did not exit", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // what other CPUs submitted is read too
	for _, ev := range e.col.all(func(kernel.Event) bool { return true }) {
		switch ev := ev.(type) {
		case *kernel.ExecEvent:
			if ev.TGID == uint32(child) {
				t.Errorf("the orphan's exec reported as a root's: %+v", ev)
			}
		case *kernel.ExitEvent:
			if ev.TGID == uint32(child) {
				t.Errorf("the orphan's exit reported as a root's: %+v", ev)
			}
		}
	}
}

// A tgid is reused once its process is reaped (32,768 pids by default on a
// 2-CPU node), and proc_cache slots are keyed by tgid: a new process must
// not inherit what its tgid's former holder was marked. Here the former
// holder was below a root in the css_set the new one then enters from
// outside (as an exec session's process does): the mark would hold there
// (marked_none) and hide the new root's exec and exit, unless the fork
// that made the new process emptied the slot (forget_slot).
func TestReusedTGIDIsJudgedAnew(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "reused"))
	h := e.start(t, []string{dir}, "spawn-hold", "4")
	select {
	case <-h.ready: // the child, below the root, has exited
	case <-time.After(waitTimeout):
		t.Fatal("the root never said ready")
	}
	old := h.childPID(t)
	// The next process from outside gets the same tgid: ns_last_pid names
	// the pid allocated last (anything else forking meanwhile takes it:
	// then again).
	var cmd *exec.Cmd
	var stdin io.Writer
	for i := 0; ; i++ {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(old-1)), 0); err != nil {
			t.Skipf("cannot choose the next pid (ns_last_pid: %v)", err)
		}
		c, in := startHelper(t, e.self, "wait-exec", "exit", "7")
		if c.Process.Pid == old {
			cmd, stdin = c, in
			break
		}
		_ = c.Process.Kill()
		if i == 50 {
			t.Fatalf("no process got the tgid %d in 50 tries (last %d)", old, c.Process.Pid)
		}
	}
	if err := moveProcess(dir, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	id := cgid(t, dir)
	ex := wait(t, e.col, "exec of the new holder of the tgid", func(ev *kernel.ExecEvent) bool {
		return ev.TGID == uint32(old) && ev.CgroupID == id
	})
	if ex.Origin&kernel.OriginWatched == 0 || ex.PPID != uint32(os.Getpid()) {
		t.Errorf("exec: origin %s ppid %d; want watched, the test %d", ex.Origin, ex.PPID, os.Getpid())
	}
	if x := wait(t, e.col, "exit of the new holder", func(ev *kernel.ExitEvent) bool { return ev.TGID == uint32(old) }); x.ExitCode != 7 {
		t.Errorf("exit code %d, want 7", x.ExitCode)
	}
}

// A process that enters a watched cgroup without exec'ing there (a
// runtime's set-up, runc's "runc init") is a root, and so is what it forks
// until that execs: the container's init comes out of such a chain.
func TestRuntimeSetUpChainIsReported(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "setup"))
	cmd, stdin := e.startIn(t, dir, "wait-spawn", "3")
	if _, err := io.WriteString(stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	fork := wait(t, e.col, "fork of the set-up process", func(ev *kernel.ForkEvent) bool { return ev.TGID == pid })
	child := fork.ChildTGID
	wait(t, e.col, "exec of its child", func(ev *kernel.ExecEvent) bool { return ev.TGID == child && ev.Origin&kernel.OriginWatched != 0 })
	if ex := wait(t, e.col, "exit of its child", func(ev *kernel.ExitEvent) bool { return ev.TGID == child }); ex.ExitCode != 3 {
		t.Errorf("child exit code %d, want 3", ex.ExitCode)
	}
	wait(t, e.col, "exit of the set-up process", func(ev *kernel.ExitEvent) bool { return ev.TGID == pid })
}

// A cgroup watched while a process runs in it: its next exec is reported,
// though the exec before (on the same CPU) left "not watched" in the
// probes' per-CPU verdict cache. WatchID raises the watched set's
// generation, which the cache checks.
func TestWatchIDRefreshesCachedVerdicts(t *testing.T) {
	e := setup(t)
	dir := e.layout.Path(fmt.Sprintf("/podchron-unwatched-%d-%d", os.Getpid(), testSeq.Add(1)))
	mkCgroup(t, dir)
	cmd, stdin := e.startIn(t, dir, "wait-exec", "wait-exec", "exit", "5")
	var cpu0 unix.CPUSet
	cpu0.Set(0)
	if err := unix.SchedSetaffinity(cmd.Process.Pid, &cpu0); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	if _, err := io.WriteString(stdin, "go\n"); err != nil { // exec in the unwatched cgroup
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if ev := e.col.find(func(ev kernel.Event) bool { x, ok := ev.(*kernel.ExecEvent); return ok && x.TGID == pid }); ev != nil {
		t.Fatalf("exec in an unwatched cgroup reported: %+v", ev)
	}
	id := cgid(t, dir)
	if err := e.p.WatchID(id); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.p.UnwatchID(id) }()
	if _, err := io.WriteString(stdin, "go\n"); err != nil { // exec once watched
		t.Fatal(err)
	}
	ex := wait(t, e.col, "exec once the cgroup is watched", func(ev *kernel.ExecEvent) bool { return ev.TGID == pid })
	if ex.Origin&kernel.OriginWatched == 0 || ex.CgroupID != id {
		t.Errorf("exec: origin %s cgroup %d, want watched, %d", ex.Origin, ex.CgroupID, id)
	}
	if x := wait(t, e.col, "exit once watched", func(ev *kernel.ExitEvent) bool { return ev.TGID == pid }); x.ExitCode != 5 {
		t.Errorf("exit code %d, want 5", x.ExitCode)
	}
}

// The hot programs cache a cgroup's watched verdict under the cgroup's
// address, which the kernel may give another cgroup once this one is gone:
// every rmdir in the hierarchy raises the programs' generation of the
// watched set (watch_gen[0]), so no cached verdict outlives its cgroup. An
// address's reuse cannot be forced from here; the generation is what keeps
// it harmless.
func TestRmdirInvalidatesCachedVerdicts(t *testing.T) {
	e := setup(t)
	gen := func() uint64 {
		t.Helper()
		var k uint32
		var g uint64
		if err := e.p.objs.WatchGen.Lookup(&k, &g); err != nil {
			t.Fatal(err)
		}
		return g
	}
	// Outside every watched root, and deeper than any reported level:
	// only the generation sees its rmdir.
	dir := e.layout.Path(fmt.Sprintf("/podchron-unwatched-%d-%d", os.Getpid(), testSeq.Add(1)))
	mkCgroup(t, dir)
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	before := gen()
	if err := os.Remove(sub); err != nil {
		t.Fatal(err)
	}
	if after := gen(); after <= before {
		t.Errorf("watch_gen[0] %d after an rmdir, was %d: a verdict cached under the removed cgroup's address would outlive it", after, before)
	}
}

// The exit of PID 1 of a pid namespace (a container's init) is marked as
// such; its parent's (the runtime's shim, here unshare) is not.
func TestExitOfPIDNamespaceInit(t *testing.T) {
	const unshare = "/usr/bin/unshare"
	if _, err := os.Stat(unshare); err != nil {
		t.Skipf("no %s (util-linux): %v", unshare, err)
	}
	e := setup(t)
	dir := e.dir(e.cgroup(t, "pidns"))
	h := e.start(t, []string{dir}, unshare, "--pid", "--fork", "/bin/sh", "-c", "exit 7")
	h.wait(t)
	init := wait(t, e.col, "exec of the namespace's init", func(ev *kernel.ExecEvent) bool {
		return ev.PPID == h.pid && len(ev.Args) > 0 && ev.Args[0] == "/bin/sh"
	})
	exit := wait(t, e.col, "exit of the namespace's init", func(ev *kernel.ExitEvent) bool { return ev.TGID == init.TGID })
	if !exit.NSInit || exit.ExitCode != 7 {
		t.Errorf("init's exit: ns_init %v code %d, want true and 7", exit.NSInit, exit.ExitCode)
	}
	parent := wait(t, e.col, "exit of unshare", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	if parent.NSInit {
		t.Errorf("unshare's exit marked as a namespace's init")
	}
}

func truncComm(s string) string {
	if len(s) > 15 {
		return s[:15]
	}
	return s
}

func TestKilledBySIGKILL(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "victim"))
	h := e.start(t, []string{dir}, "sleep")
	wait(t, e.col, "exec", func(ev *kernel.ExecEvent) bool { return ev.TGID == h.pid })
	if err := syscall.Kill(int(h.pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	sig := wait(t, e.col, "SIGKILL generated", func(ev *kernel.SignalEvent) bool {
		return ev.TargetTGID == h.pid && ev.Signal == syscall.SIGKILL
	})
	if sig.TGID != uint32(os.Getpid()) || sig.Code != kernel.SIUser || sig.Result != kernel.SignalDelivered || sig.TargetCgroupID != cgid(t, dir) {
		t.Errorf("SIGKILL: sender %d code %d result %s target cgroup %d", sig.TGID, sig.Code, sig.Result, sig.TargetCgroupID)
	}
	if sig.Origin&kernel.OriginTarget == 0 || sig.SenderWatched {
		t.Errorf("SIGKILL: origin %s sender watched %v", sig.Origin, sig.SenderWatched)
	}
	exit := wait(t, e.col, "exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	if exit.Signal != syscall.SIGKILL || exit.ExitCode != 0 {
		t.Errorf("exit: signal %v code %d, want SIGKILL", exit.Signal, exit.ExitCode)
	}
	// The group teardown's SIGKILL to each thread is not reported as a delivery.
	if d := e.col.all(func(ev kernel.Event) bool {
		x, ok := ev.(*kernel.SignalDeliverEvent)
		return ok && x.TGID == h.pid && x.Signal == syscall.SIGKILL
	}); len(d) != 0 {
		t.Errorf("got %d SIGKILL deliveries for a group teardown", len(d))
	}
}

func TestSIGTERMFromKnownSender(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "pod"))
	target := e.start(t, []string{dir}, "handle-term")
	target.waitReady(t)
	sender := e.start(t, []string{dir}, "kill", strconv.Itoa(int(target.pid)), strconv.Itoa(int(syscall.SIGTERM)))
	sender.wait(t)
	target.wait(t)

	sig := wait(t, e.col, "SIGTERM generated", func(ev *kernel.SignalEvent) bool {
		return ev.TargetTGID == target.pid && ev.Signal == syscall.SIGTERM
	})
	if sig.TGID != sender.pid || sig.Comm != truncComm(filepath.Base(e.self)) || sig.CgroupID != cgid(t, dir) || !sig.SenderWatched {
		t.Errorf("sender: tgid %d comm %q cgroup %d watched %v; want %d", sig.TGID, sig.Comm, sig.CgroupID, sig.SenderWatched, sender.pid)
	}
	if sig.Code != kernel.SIUser || sig.Result != kernel.SignalDelivered || sig.Disposition != kernel.DispositionHandler {
		t.Errorf("SIGTERM: code %d result %s disposition %s; want user, delivered, handler", sig.Code, sig.Result, sig.Disposition)
	}
	del := wait(t, e.col, "SIGTERM delivered", func(ev *kernel.SignalDeliverEvent) bool {
		return ev.TGID == target.pid && ev.Signal == syscall.SIGTERM
	})
	if del.Disposition != kernel.DispositionHandler || del.Code != kernel.SIUser {
		t.Errorf("delivery: disposition %s code %d", del.Disposition, del.Code)
	}
	exit := wait(t, e.col, "target exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == target.pid })
	if exit.ExitCode != 0 || exit.Signal != 0 {
		t.Errorf("handled SIGTERM should exit 0: %+v", exit)
	}
}

func TestSIGTERMIgnored(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "stubborn"))
	h := e.start(t, []string{dir}, "ignore-term")
	h.waitReady(t)
	if err := syscall.Kill(int(h.pid), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sig := wait(t, e.col, "SIGTERM generated", func(ev *kernel.SignalEvent) bool {
		return ev.TargetTGID == h.pid && ev.Signal == syscall.SIGTERM
	})
	if sig.Disposition != kernel.DispositionIgnored || sig.Result != kernel.SignalIgnored {
		t.Errorf("ignored SIGTERM: disposition %s result %s", sig.Disposition, sig.Result)
	}
	// Still alive: no delivery, no exit. Prove it with a later event.
	if err := syscall.Kill(int(h.pid), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	exit := wait(t, e.col, "exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	if exit.Signal != syscall.SIGKILL {
		t.Errorf("exit signal %v, want SIGKILL", exit.Signal)
	}
	if d := e.col.find(func(ev kernel.Event) bool {
		x, ok := ev.(*kernel.SignalDeliverEvent)
		return ok && x.TGID == h.pid && x.Signal == syscall.SIGTERM
	}); d != nil {
		t.Errorf("an ignored SIGTERM was delivered: %s", kernel.Format(d))
	}
}

func TestSIGTERMDefaultDisposition(t *testing.T) {
	e := setup(t)
	dir := e.dir(e.cgroup(t, "plain"))
	// Not a Go program: the Go runtime installs a handler for SIGTERM.
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("no sleep binary: %v", err)
	}
	h := e.start(t, []string{dir}, sleep, "1000")
	wait(t, e.col, "exec", func(ev *kernel.ExecEvent) bool { return ev.TGID == h.pid && ev.Filename == sleep })
	if err := syscall.Kill(int(h.pid), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	sig := wait(t, e.col, "SIGTERM generated", func(ev *kernel.SignalEvent) bool {
		return ev.TargetTGID == h.pid && ev.Signal == syscall.SIGTERM
	})
	if sig.Disposition != kernel.DispositionDefault || sig.Result != kernel.SignalDelivered {
		t.Errorf("SIGTERM: disposition %s result %s", sig.Disposition, sig.Result)
	}
	exit := wait(t, e.col, "exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	if exit.Signal != syscall.SIGTERM {
		t.Errorf("exit signal %v, want SIGTERM", exit.Signal)
	}
}

// nestedMemoryCgroup makes a memory cgroup for a test process, in whichever
// hierarchy holds the memory controller on this host, with the limit either
// on the process's own memory cgroup or on its parent (as a pod's limit is
// above its containers'). It also returns the memory cgroups, innermost
// first.
func (e *env) nestedMemoryCgroup(t *testing.T, name string, limit int, parentLimit bool) (dirs, memcgs []string) {
	t.Helper()
	setLimit := func(dir string) {
		if e.layout.MemoryMount != "" {
			writeFile(t, filepath.Join(dir, "memory.limit_in_bytes"), strconv.Itoa(limit))
			if _, err := os.Stat(filepath.Join(dir, "memory.memsw.limit_in_bytes")); err == nil {
				writeFile(t, filepath.Join(dir, "memory.memsw.limit_in_bytes"), strconv.Itoa(limit))
			}
			return
		}
		writeFile(t, filepath.Join(dir, "memory.max"), strconv.Itoa(limit))
		if _, err := os.Stat(filepath.Join(dir, "memory.swap.max")); err == nil {
			writeFile(t, filepath.Join(dir, "memory.swap.max"), "0")
		}
	}
	if e.layout.MemoryMount != "" {
		// v1 memory controller (hybrid or v1 host): a separate hierarchy.
		mem := filepath.Join(e.layout.MemoryMount, strings.TrimPrefix(e.root, "/")+"-"+name)
		mkCgroup(t, mem)
		memcgs = []string{mem}
		if parentLimit {
			// Older kernels only charge parents with use_hierarchy set
			// (always on since 5.16; the file is then read-only).
			_ = os.WriteFile(filepath.Join(mem, "memory.use_hierarchy"), []byte("1"), 0o644)
			setLimit(mem)
			mem = filepath.Join(mem, "leaf")
			mkCgroup(t, mem)
			memcgs = []string{mem, memcgs[0]}
		} else {
			setLimit(mem)
		}
		if e.layout.Mode == cgroupfs.ModeV1Memory {
			return []string{mem}, memcgs
		}
		return []string{e.dir(e.cgroup(t, name)), mem}, memcgs
	}
	// Pure v2: enable the controller down to our cgroup.
	writeFile(t, filepath.Join(e.layout.V2Mount, "cgroup.subtree_control"), "+memory")
	writeFile(t, filepath.Join(e.dir(e.root), "cgroup.subtree_control"), "+memory")
	dir := e.dir(e.cgroup(t, name))
	setLimit(dir)
	if !parentLimit {
		return []string{dir}, []string{dir}
	}
	writeFile(t, filepath.Join(dir, "cgroup.subtree_control"), "+memory")
	leaf := filepath.Join(dir, "leaf")
	mkCgroup(t, leaf)
	return []string{leaf}, []string{leaf, dir}
}

func writeFile(t *testing.T, path, val string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(val), 0o644); err != nil {
		t.Fatalf("write %s: %v", path, err)
	}
}

func TestOOMKill(t *testing.T) {
	e := setup(t)
	dirs, memcgs := e.nestedMemoryCgroup(t, "oom", 32<<20, false)
	h := e.start(t, dirs, "alloc", "512")
	h.wait(t)
	id := cgid(t, dirs[0])

	oom := wait(t, e.col, "OOM kill", func(ev *kernel.OOMEvent) bool { return ev.VictimTGID == h.pid })
	if !oom.VictimKnown || oom.VictimCgroupID != id || oom.VictimComm != truncComm(filepath.Base(e.self)) || oom.Origin&kernel.OriginTarget == 0 {
		t.Errorf("OOM: known %v cgroup %d (want %d) comm %q origin %s", oom.VictimKnown, oom.VictimCgroupID, id, oom.VictimComm, oom.Origin)
	}
	// Which path the program takes is a CO-RE relocation against the
	// kernel's BTF: expect what the BTF says, not what the version suggests.
	wantRSS := kernelStructHas(t, "trace_event_raw_mark_victim", "anon_rss")
	if oom.HasRSS != wantRSS {
		t.Errorf("OOM: memory figures reported %v, but the kernel's mark_victim tracepoint has them: %v", oom.HasRSS, wantRSS)
	}
	if wantRSS {
		if oom.AnonRSSKB < 16<<10 || oom.TotalVMKB < oom.AnonRSSKB {
			t.Errorf("OOM: anon rss %d kB, total vm %d kB; want about the 32 MiB limit", oom.AnonRSSKB, oom.TotalVMKB)
		}
		t.Logf("KERNEL-PATH oom-rss=reported (mark_victim has the memory figures in the kernel's BTF)")
	} else {
		if oom.AnonRSSKB|oom.FileRSSKB|oom.ShmemRSSKB|oom.TotalVMKB != 0 || oom.OOMScoreAdj != 0 {
			t.Errorf("OOM: no memory figures on this kernel, yet got %+v", oom)
		}
		t.Logf("KERNEL-PATH oom-rss=unknown (mark_victim has no memory figures in the kernel's BTF; added in 6.8), as the event says")
	}
	kill := wait(t, e.col, "the OOM killer's SIGKILL", func(ev *kernel.SignalEvent) bool {
		return ev.TargetTGID == h.pid && ev.Signal == syscall.SIGKILL
	})
	if kill.Code != kernel.SIKernel || kill.TargetCgroupID != id {
		t.Errorf("OOM SIGKILL: code %d target cgroup %d", kill.Code, kill.TargetCgroupID)
	}
	checkOOMMemcgs(t, oom, memcgs, 0)
	exit := wait(t, e.col, "exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	if exit.Signal != syscall.SIGKILL {
		t.Errorf("exit: signal %v, want SIGKILL", exit.Signal)
	}
	t.Logf("OOM: %s", kernel.Format(oom))
}

// TestOOMKillOfABystander: the task that hits the limit is not the one the
// OOM killer picks (a small process allocates; a big one holding memory in
// the same cgroup dies). mark_victim runs in the allocator's context and
// names the victim by pid only; the event still says which cgroup the
// victim was in, and its name, from the victim task itself (its SIGKILL
// just before, on the same CPU), so a victim the probes never reported (a
// container's child) is still put in its container.
func TestOOMKillOfABystander(t *testing.T) {
	e := setup(t)
	dirs, memcgs := e.nestedMemoryCgroup(t, "oombystander", 48<<20, false)
	big := e.start(t, dirs, "hold", "36")
	big.waitReady(t)
	small := e.start(t, dirs, "alloc", "24")
	small.wait(t)
	id := cgid(t, dirs[0])

	oom := wait(t, e.col, "OOM kill of the big process", func(ev *kernel.OOMEvent) bool { return ev.VictimTGID == big.pid })
	t.Logf("OOM: %s", kernel.Format(oom))
	if oom.TGID != small.pid {
		t.Fatalf("the OOM killer ran in task %d, not the allocator %d: the test did not make a bystander victim", oom.TGID, small.pid)
	}
	if !oom.VictimKnown || oom.VictimCgroupID != id || oom.VictimComm != truncComm(filepath.Base(e.self)) {
		t.Errorf("OOM of a bystander: known %v cgroup %d (want %d) comm %q", oom.VictimKnown, oom.VictimCgroupID, id, oom.VictimComm)
	}
	if oom.Origin&kernel.OriginTarget == 0 {
		t.Errorf("OOM of a bystander in a watched cgroup: origin %s, want the target flag", oom.Origin)
	}
	checkOOMMemcgs(t, oom, memcgs, 0)
	if exit := wait(t, e.col, "exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == big.pid }); exit.Signal != syscall.SIGKILL {
		t.Errorf("exit: signal %v, want SIGKILL", exit.Signal)
	}
}

// TestOOMKillParentLimit: the limit that runs out is the parent's (a pod's,
// above its container's cgroup), and the event's memory cgroup counters say
// so: the parent's OOM count grew, the process's own did not.
func TestOOMKillParentLimit(t *testing.T) {
	e := setup(t)
	dirs, memcgs := e.nestedMemoryCgroup(t, "oomparent", 32<<20, true)
	h := e.start(t, dirs, "alloc", "512")
	h.wait(t)
	oom := wait(t, e.col, "OOM kill", func(ev *kernel.OOMEvent) bool { return ev.VictimTGID == h.pid })
	checkOOMMemcgs(t, oom, memcgs, 1)
	t.Logf("OOM: %s", kernel.Format(oom))
}

// checkOOMMemcgs checks an OOM event's memory cgroups against the test's
// (innermost first): the same cgroups at consecutive levels, and OOMs
// counted on memcgs[limited] only.
func checkOOMMemcgs(t *testing.T, oom *kernel.OOMEvent, memcgs []string, limited int) {
	t.Helper()
	if len(oom.Memcgs) < len(memcgs)+1 {
		t.Fatalf("OOM: %d memory cgroups read, want at least %d (the test's and their ancestors): %+v", len(oom.Memcgs), len(memcgs)+1, oom.Memcgs)
	}
	for i, dir := range memcgs {
		m := oom.Memcgs[i]
		if want := cgid(t, dir); m.ID != want {
			t.Errorf("OOM: memcg %d is cgroup %d, want %d (%s)", i, m.ID, want, dir)
		}
		// Levels as the tracer's cgroupfs shows them (a nested node's
		// root is level 0).
		if depth := cgroupDepth(t, dir); int(m.Level) != depth {
			t.Errorf("OOM: memcg %d (%s) at level %d, want %d", i, dir, m.Level, depth)
		}
		if i > 0 && m.Level+1 != oom.Memcgs[i-1].Level {
			t.Errorf("OOM: memcg %d at level %d above one at level %d", i, m.Level, oom.Memcgs[i-1].Level)
		}
		// The limited cgroup counts each allocation that found it full:
		// one, or more when another thread of the process hit it before
		// the kill (seen on 5.10). The others count none.
		if got := m.OOMs; i == limited && got == 0 || i != limited && got != 0 {
			t.Errorf("OOM: memcg %d (%s) counted %d OOMs; the limit is on %s", i, dir, got, memcgs[limited])
		}
	}
}

// cgroupDepth is the level of a cgroup directory below its hierarchy's
// mount (the mount's root is 0).
func cgroupDepth(t *testing.T, dir string) int {
	t.Helper()
	best := ""
	for _, m := range cgroupMountPoints(t) {
		if (dir == m || strings.HasPrefix(dir, m+"/")) && len(m) > len(best) {
			best = m
		}
	}
	if best == "" {
		t.Fatalf("%s is under no cgroup mount", dir)
	}
	return strings.Count(strings.TrimPrefix(dir, best), "/")
}

func cgroupMountPoints(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if ok && len(pf) > 4 && len(qf) > 0 && (qf[0] == "cgroup" || qf[0] == "cgroup2") {
			out = append(out, cgroupfs.UnescapeMount(pf[4]))
		}
	}
	return out
}

// kernelStructHas tells whether the kernel's BTF has struct name with the
// member field.
func kernelStructHas(t *testing.T, name, field string) bool {
	t.Helper()
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatalf("kernel BTF: %v", err)
	}
	var st *btf.Struct
	if err := spec.TypeByName(name, &st); err != nil {
		t.Fatalf("kernel BTF: struct %s: %v", name, err)
	}
	for _, m := range st.Members {
		if m.Name == field {
			return true
		}
	}
	return false
}

// TestKernelPaths proves the programs take the kernel-dependent path this
// kernel's BTF calls for: cgroup ancestors from cgroup->ancestor_ids[]
// (before 6.0) or cgroup->ancestors[] (6.0+), and the current task's
// ancestors walked where tracing programs may not call
// bpf_get_current_ancestor_cgroup_id (5.10) — and that the cgroup filter
// works through them.
func TestKernelPaths(t *testing.T) {
	e := setup(t)
	ids := kernelStructHas(t, "cgroup", "ancestor_ids")
	ptrs := kernelStructHas(t, "cgroup", "ancestors")
	if ids == ptrs {
		t.Fatalf("kernel struct cgroup: ancestor_ids %v, ancestors %v; want exactly one", ids, ptrs)
	}
	// A cgroup made below the root (cgroup_mkdir looks up its ancestors), a
	// process there sent SIGTERM from outside (signal_generate looks up the
	// target's ancestors) and handling it (signal_deliver, the current
	// task's).
	rel := e.cgroup(t, "paths")
	dir := e.dir(rel)
	h := e.start(t, []string{dir}, "handle-term")
	h.waitReady(t)
	if err := syscall.Kill(int(h.pid), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h.wait(t)
	mk := wait(t, e.col, "mkdir", func(ev *kernel.CgroupEvent) bool { return ev.Type == kernel.EventCgroupMkdir && ev.Path == rel })
	gen := wait(t, e.col, "SIGTERM generated", func(ev *kernel.SignalEvent) bool { return ev.TargetTGID == h.pid && ev.Signal == syscall.SIGTERM })
	del := wait(t, e.col, "SIGTERM delivered", func(ev *kernel.SignalDeliverEvent) bool { return ev.TGID == h.pid && ev.Signal == syscall.SIGTERM })
	if mk.Origin&kernel.OriginWatched == 0 || gen.Origin&kernel.OriginTarget == 0 || gen.SenderWatched || del.Origin&kernel.OriginWatched == 0 {
		t.Errorf("cgroup filter: mkdir origin %s, signal origin %s sender watched %v, delivery origin %s", mk.Origin, gen.Origin, gen.SenderWatched, del.Origin)
	}
	paths, err := e.p.Paths()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("KERNEL-PATHS %s", paths)
	if paths.AncestorIDs != ids || paths.AncestorPtrs != ptrs {
		t.Errorf("cgroup ancestors: took ancestor_ids %v, ancestors %v; the kernel's BTF has ancestor_ids %v, ancestors %v",
			paths.AncestorIDs, paths.AncestorPtrs, ids, ptrs)
	}
	if paths.CurrentWalk == paths.AncestorHelper {
		t.Errorf("current task's ancestors: walked %v with the helper available %v; want a walk exactly when the helper is missing", paths.CurrentWalk, paths.AncestorHelper)
	}
	if want := exitGroupDeadInBTF(t); paths.ExitGroupDead != want {
		t.Errorf("exit: group_dead used %v, the tracepoint has it %v", paths.ExitGroupDead, want)
	}
}

func exitGroupDeadInBTF(t *testing.T) bool {
	t.Helper()
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		t.Fatal(err)
	}
	var td *btf.Typedef
	if err := spec.TypeByName("btf_trace_sched_process_exit", &td); err != nil {
		t.Fatal(err)
	}
	return len(td.Type.(*btf.Pointer).Target.(*btf.FuncProto).Params) >= 3
}

func TestCgroupMkdirRmdir(t *testing.T) {
	e := setup(t)
	rel := fmt.Sprintf("%s/pod1234-%d", e.root, testSeq.Add(1))
	dir := e.dir(rel)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	id := cgid(t, dir)
	if err := unix.Rmdir(dir); err != nil {
		t.Fatal(err)
	}
	mk := wait(t, e.col, "cgroup_mkdir", func(ev *kernel.CgroupEvent) bool { return ev.Type == kernel.EventCgroupMkdir && ev.Path == rel })
	rm := wait(t, e.col, "cgroup_rmdir", func(ev *kernel.CgroupEvent) bool { return ev.Type == kernel.EventCgroupRmdir && ev.Path == rel })
	for _, ev := range []*kernel.CgroupEvent{mk, rm} {
		if ev.ID != id || ev.Level != 2 || ev.HierarchyID != e.layout.HierarchyID() || ev.TGID != uint32(os.Getpid()) || ev.Origin&kernel.OriginWatched == 0 {
			t.Errorf("%s: id %d (want %d) level %d hierarchy %d tgid %d origin %s", ev.Type, ev.ID, id, ev.Level, ev.HierarchyID, ev.TGID, ev.Origin)
		}
	}
}

func TestRootCreatedAfterLoad(t *testing.T) {
	late := fmt.Sprintf("/podchron-late-%d-%d", os.Getpid(), testSeq.Add(1))
	e := setup(t)
	// A configured root that does not exist yet (Load adds each configured
	// root the same way).
	if err := e.p.AddRoot(late); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("AddRoot of a missing root: %v, want os.ErrNotExist", err)
	}
	mkCgroup(t, e.dir(late))
	wait(t, e.col, "mkdir of the root", func(ev *kernel.CgroupEvent) bool { return ev.Type == kernel.EventCgroupMkdir && ev.Path == late })
	// The root is now watched: a process below it is reported.
	dir := e.dir(late + "/c")
	mkCgroup(t, dir)
	h := e.start(t, []string{dir}, "exit", "0")
	h.wait(t)
	wait(t, e.col, "exec under the late root", func(ev *kernel.ExecEvent) bool { return ev.TGID == h.pid && ev.CgroupID == cgid(t, dir) })
}

// TestCNIPluginRun runs a real CNI plugin with the CNI variables after the
// runtime's own environment, as libcni lays it out: one that fits the
// kernel's copy, and one (a node with a long environment) that is copied as
// its first and last halves.
func TestCNIPluginRun(t *testing.T) {
	const plugin = "/usr/lib/cni/loopback"
	if _, err := os.Stat(plugin); err != nil {
		t.Skipf("no CNI plugin to run (install Debian's containernetworking-plugins): %v", err)
	}
	e := setup(t)
	for _, tc := range []struct {
		name string
		long int // bytes of one variable before the CNI ones
	}{{"short-env", 3000}, {"env-longer-than-the-buffer", 20000}} {
		t.Run(tc.name, func(t *testing.T) {
			containerID := strings.Repeat("ab12", 16)
			cniArgs := "IgnoreUnknown=1;K8S_POD_NAMESPACE=shop;K8S_POD_NAME=cart-7d9f;K8S_POD_INFRA_CONTAINER_ID=" + containerID + ";K8S_POD_UID=0b6e0b3c-1f2d-4a5b-9c8d-7e6f5a4b3c2d"
			cmd := exec.Command(plugin)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "LONG=" + strings.Repeat("x", tc.long)}
			for i := range 40 {
				cmd.Env = append(cmd.Env, fmt.Sprintf("FILLER_%d=%d", i, i))
			}
			cmd.Env = append(cmd.Env,
				"CNI_COMMAND=VERSION", "CNI_CONTAINERID="+containerID, "CNI_IFNAME=eth0",
				"CNI_NETNS=/var/run/netns/cni-1234", "CNI_PATH=/usr/lib/cni", "CNI_ARGS="+cniArgs)
			cmd.Stdin = strings.NewReader(`{"cniVersion":"1.0.0"}`)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("run %s: %v", plugin, err)
			}
			pid := uint32(cmd.Process.Pid)
			exe := wait(t, e.col, "CNI exec", func(ev *kernel.ExecEvent) bool { return ev.TGID == pid })
			want := kernel.CNIRun{Command: "VERSION", ContainerID: containerID, IfName: "eth0", NetNS: "/var/run/netns/cni-1234", Args: cniArgs,
				PodNamespace: "shop", PodName: "cart-7d9f", PodUID: "0b6e0b3c-1f2d-4a5b-9c8d-7e6f5a4b3c2d", InfraContainerID: containerID}
			if exe.CNI == nil || *exe.CNI != want {
				t.Fatalf("CNI run: got %+v, want %+v", exe.CNI, want)
			}
			if exe.Filename != plugin || exe.Origin&kernel.OriginCNI == 0 || exe.Origin&kernel.OriginWatched != 0 {
				t.Errorf("CNI exec: filename %q origin %s", exe.Filename, exe.Origin)
			}
			exit := wait(t, e.col, "CNI plugin exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == pid })
			if exit.ExitCode != 0 || exit.Origin&kernel.OriginCNI == 0 {
				t.Errorf("CNI exit: %+v", exit)
			}
			t.Logf("plugin said %s", strings.TrimSpace(string(out)))
		})
	}
}

func TestRuntimeProcessFollowed(t *testing.T) {
	e := setup(t)
	runc := filepath.Join(t.TempDir(), "runc")
	copyFile(t, e.self, runc)
	cmd := exec.Command(runc, "0")
	cmd.Env = helperEnviron("exit")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	exe := wait(t, e.col, "runtime exec", func(ev *kernel.ExecEvent) bool { return ev.TGID == pid })
	if exe.Comm != "runc" || exe.Origin != kernel.OriginRuntime {
		t.Errorf("runtime exec: comm %q origin %s", exe.Comm, exe.Origin)
	}
	wait(t, e.col, "runtime exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == pid && ev.Origin&kernel.OriginRuntime != 0 })
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestUnwatchedProcessIsFiltered(t *testing.T) {
	e := setup(t)
	// A process outside every watched cgroup...
	cmd := exec.Command(e.self, "7")
	cmd.Env = helperEnviron("spawn")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	outside := uint32(cmd.Process.Pid)
	// ...then a marker inside one: once its exit arrives, anything the first
	// process caused has been read too (one ring buffer, in order).
	dir := e.dir(e.cgroup(t, "marker"))
	h := e.start(t, []string{dir}, "exit", "0")
	h.wait(t)
	wait(t, e.col, "marker exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	if got := e.col.all(func(ev kernel.Event) bool {
		hd := ev.Hdr()
		return hd.TGID == outside || hd.PPID == outside
	}); len(got) != 0 {
		for _, ev := range got {
			t.Errorf("unwatched process reported: %s", kernel.Format(ev))
		}
	}
}

// TestLostEventsAreCounted also proves exits are reported once per process,
// through the kernel's group_dead argument where it exists and through the
// deduplication older kernels use.
func TestLostEventsAreCounted(t *testing.T) {
	t.Run("kernel-group-dead", func(t *testing.T) {
		requireProbes(t)
		if g, err := exitHasGroupDead(); err == nil && g == 0 {
			t.Skip("the kernel's sched_process_exit passes no group_dead: the dedupe subtest is this kernel's only path")
		}
		testLostEvents(t, false)
	})
	t.Run("dedupe", func(t *testing.T) { testLostEvents(t, true) })
}

func testLostEvents(t *testing.T, dedupe bool) {
	requireProbes(t)
	layout, err := cgroupfs.Detect(cgroupfs.ModeAuto)
	if err != nil {
		t.Skip(err)
	}
	root := fmt.Sprintf("/podchron-test-%d-lost-%d", os.Getpid(), testSeq.Add(1))
	mkCgroup(t, layout.Path(root))
	cfg := DefaultConfig()
	cfg.CgroupRoots = []string{root}
	cfg.RingBufferBytes = 4096
	cfg.WakeupEvents = 0
	// Count only the storm. Its root is this test's alone, and no runtime
	// comm or CNI directory is matched: runtime processes and CNI plugins
	// run by anything else on the machine (tests of other packages run in
	// parallel under go test ./...) would be counted too.
	cfg.RuntimeComms = []string{}
	cfg.CNIDirs = []string{}
	cfg.exitDedupe = dedupe
	cfg.AllProcesses = true // the storm's children: below its root
	p, err := Load(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// Nobody reads the ring buffer: most of the storm cannot fit.
	e := &env{p: p, layout: layout, root: root, col: &collector{notify: make(chan struct{}, 1)}}
	e.self, _ = os.Executable()
	const n = 50
	h := e.start(t, []string{layout.Path(root)}, "storm", strconv.Itoa(n))
	h.wait(t)
	c, err := p.Counters()
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[kernel.EventType]uint64{kernel.EventExec: n + 1, kernel.EventFork: n, kernel.EventExit: n + 1} {
		got := c[typ].Emitted + c[typ].Lost
		if got != want {
			t.Errorf("%s: emitted %d + lost %d = %d, want %d", typ, c[typ].Emitted, c[typ].Lost, got, want)
		}
	}
	if c[kernel.EventExec].Lost == 0 {
		t.Errorf("a 4 KiB ring buffer held %d exec events: nothing lost?", c[kernel.EventExec].Emitted)
	}
	// What was emitted is in the ring buffer: every exec, fork and exit
	// record is the storm's (the helper or a child it forked), and there are
	// as many as counted. (OOM kills and top-level cgroup mkdir/rmdir are
	// reported machine-wide by design; they are not counted here.)
	src, err := p.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	read := map[kernel.EventType]uint64{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for {
		ev, err := src.Next(ctx)
		if err != nil {
			break
		}
		hd := ev.Hdr()
		read[hd.Type]++
		if hd.Type != kernel.EventExec && hd.Type != kernel.EventFork && hd.Type != kernel.EventExit {
			continue
		}
		if hd.TGID != h.pid && hd.PPID != h.pid {
			t.Errorf("a process not of the storm was counted: %s", kernel.Format(ev))
		}
	}
	for _, typ := range []kernel.EventType{kernel.EventExec, kernel.EventFork, kernel.EventExit} {
		if read[typ] != c[typ].Emitted {
			t.Errorf("%s: %d records in the ring buffer, %d counted as emitted", typ, read[typ], c[typ].Emitted)
		}
	}
	t.Logf("counters: %+v; records read back: %v", c, read)
}

func TestCgroupV1MemoryMode(t *testing.T) {
	requireProbes(t)
	l, err := cgroupfs.Detect(cgroupfs.ModeAuto)
	if err != nil || l.MemoryMount == "" {
		t.Skip("no v1 memory controller mounted on this host")
	}
	e := setup(t, func(c *Config) { c.CgroupMode = cgroupfs.ModeV1Memory })
	if e.layout.Mode != cgroupfs.ModeV1Memory || !strings.HasPrefix(e.dir(e.root), l.MemoryMount) {
		t.Fatalf("layout %+v", e.layout)
	}
	rel := e.cgroup(t, "v1")
	dir := e.dir(rel)
	h := e.start(t, []string{dir}, "exit", "5")
	h.wait(t)
	exit := wait(t, e.col, "exit in a v1 cgroup", func(ev *kernel.ExitEvent) bool { return ev.TGID == h.pid })
	if exit.CgroupID != cgid(t, dir) || exit.ExitCode != 5 {
		t.Errorf("v1 exit: cgroup %d (want %d) code %d", exit.CgroupID, cgid(t, dir), exit.ExitCode)
	}
	mk := wait(t, e.col, "v1 mkdir", func(ev *kernel.CgroupEvent) bool { return ev.Type == kernel.EventCgroupMkdir && ev.Path == rel })
	if mk.HierarchyID != uint32(l.MemoryHierarchyID) {
		t.Errorf("v1 mkdir: hierarchy %d, want %d", mk.HierarchyID, l.MemoryHierarchyID)
	}
}

// A record that is its CPU's first for a while wakes the reader at once
// (WakeupGap): the poll, here far longer than the wait, never brings it. A
// quiet node's reader polls rarely (IdlePollInterval) and relies on it.
func TestQuietRecordWakesTheReader(t *testing.T) {
	e := setup(t, func(c *Config) {
		c.PollInterval, c.IdlePollInterval, c.WakeupGap = time.Hour, time.Hour, time.Millisecond
	})
	dir := e.dir(e.cgroup(t, "quiet"))
	time.Sleep(50 * time.Millisecond) // the cgroup's record: more than a gap before
	h := e.start(t, []string{dir}, "spawn", "3")
	wait(t, e.col, "exec of the helper", func(ev *kernel.ExecEvent) bool { return ev.TGID == h.pid })
	h.wait(t)
}
