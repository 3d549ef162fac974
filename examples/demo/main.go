// Command demo shows podchron on a machine without Kubernetes: it starts a
// private containerd (with a real OCI runtime and CNI plugins), runs the
// tracer against it, and drives pods through CRI the way a kubelet would: a
// graceful stop, a container that ignores SIGTERM, an OOM kill, a crash loop
// with back-off, and a kill from inside a pod. The tracer prints one
// timeline per pod.
//
// The demo checks itself: it reads every span the tracer emits (the tracer
// runs with --output json; text mode renders them with the tracer's own
// console printer) and holds each pod's trace against what the scenario did
// — the exit cause of every run, the stop and its SIGTERM disposition, the
// termination, the container's own command for PID 1 (never a runtime's
// bootstrap such as `runc init`). It ends with one verdict line per pod and
// exits non-zero when any trace is wrong. Needs root.
//
//	demo -tracer bin/tracer                  # Debian's runc ($PODCHRON_OCI_RUNTIME)
//	demo -runtime crun                       # runc | runc-upstream | crun | /path/to/runtime
//	demo -load                               # under background CPU load (test/load)
//	demo -nested                             # as a kind node: containerd and the tracer in their own pid, mount, cgroup namespaces
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/export/console"
	"github.com/podchron/podchron/test/harness/containerd"
	"github.com/podchron/podchron/test/harness/nested"
	"github.com/podchron/podchron/test/load"
)

type options struct {
	tracer, output, record, runtime string
	metricsAddr, cgroupDriver       string
	verbose, load, check, nested    bool
	execRate                        int
}

func main() {
	var o options
	flag.StringVar(&o.tracer, "tracer", "bin/tracer", "path to the tracer binary")
	flag.StringVar(&o.output, "output", "text", "tracer output: text or json (one span per line)")
	flag.BoolVar(&o.verbose, "verbose", false, "text output: every span attribute")
	flag.StringVar(&o.record, "record", "", "also record the tracer's input stream to this file")
	flag.StringVar(&o.runtime, "runtime", os.Getenv(containerd.RuntimeEnv),
		"OCI runtime: "+strings.Join(containerd.RuntimeNames, ", ")+" or an absolute path (default $"+containerd.RuntimeEnv+", else runc)")
	flag.StringVar(&o.metricsAddr, "metrics-addr", defaultMetricsAddr, "the tracer's /metrics, /healthz and /readyz (the default falls back to a free port when taken)")
	flag.BoolVar(&o.load, "load", false, "run the scenarios under background CPU load: a busy process per CPU (test/load)")
	flag.IntVar(&o.execRate, "load-exec", load.DefaultExecPerSecond, "with -load: short-lived processes exec'd per second (0: none)")
	flag.BoolVar(&o.check, "check", true, "check every pod's trace and exit non-zero when one is wrong")
	flag.StringVar(&o.cgroupDriver, "cgroup-driver", containerd.CgroupDriverCgroupfs, "the kubelet's cgroup driver to play: "+containerd.CgroupDriverCgroupfs+" (pod cgroups under a private root) or "+containerd.CgroupDriverSystemd+" (pod slices and container scopes under a private slice; needs systemd as PID 1)")
	flag.BoolVar(&o.nested, "nested", false, "run as a node inside a container does (kind, minikube): containerd, the CRI client and the tracer in new pid, mount and cgroup namespaces (test/harness/nested)")
	flag.Parse()
	if o.nested && !nested.Inside() {
		if err := runNested(); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// scenario is one pod the demo drives, and what its trace must say.
type scenario struct {
	title string
	// fn drives the pod; it may complete the want with what only the run
	// shows (the OOM pod's cgroup path and victim count on cgroup v2).
	fn   func(context.Context, *containerd.Harness, *podWant) error
	want podWant
}

// The pods' commands, shared by the scenarios and their expectations.
var (
	gracefulCmd = []string{"sh", "-c", "trap 'echo bye; exit 0' TERM; while :; do sleep 0.2; done"}
	stubbornCmd = []string{"sleep", "1000"}
	oomCmd      = []string{"sh", "-c", "sleep 1; dd if=/dev/zero of=/dev/null bs=256M count=1"}
	// On pure cgroup v2 the OOM pod's container gets memory.oom.group=1 (as
	// from a kubelet) and has a second process, so the OOM kill is a group
	// kill of both.
	oomGroupCmd  = []string{"sh", "-c", "sleep 1000 & sleep 2; dd if=/dev/zero of=/dev/null bs=256M count=1"}
	crashCmd     = []string{"sh", "-c", "echo starting; sleep 0.3; exit 1"}
	victimCmd    = []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"}
	crashAttempt = 3
)

func scenarios() []scenario {
	crashRuns := make([]runWant, crashAttempt)
	for i := range crashRuns {
		crashRuns[i] = runWant{args: crashCmd, cause: "error", exitCode: 1}
	}
	return []scenario{
		{"graceful stop", graceful, podWant{pod: "demo/web",
			runs: []runWant{{args: gracefulCmd, cause: "completed", exitCode: 0}},
			stop: &stopWant{disposition: "handler"}}},
		{"SIGTERM ignored, SIGKILL at the end of the grace period", stubborn, podWant{pod: "demo/stubborn",
			runs: []runWant{{args: stubbornCmd, cause: "killed_by_runtime", signal: "SIGKILL"}},
			stop: &stopWant{disposition: "ignored", sigkill: true}, overrun: true}},
		{"OOM kill", oom, podWant{pod: "demo/hungry",
			runs: []runWant{{args: oomCmd, cause: "oom_killed", signal: "SIGKILL"}}}},
		{"crash loop with back-off", crashloop, podWant{pod: "demo/crasher",
			runs: crashRuns, backoffs: crashAttempt - 1}},
		// PID 1 of a PID namespace cannot be killed from inside it: the run
		// carries the in-pod SIGKILL (ignored) and ends at the stop, handled.
		{"kill -9 1 from inside the container (ignored: PID 1 of its namespace)", inPodKill, podWant{pod: "demo/victim",
			runs: []runWant{{args: victimCmd, cause: "completed", exitCode: 0,
				signalEvent: &signalWant{sig: "SIGKILL", senderKind: "in_pod", result: "ignored"}}},
			stop: &stopWant{disposition: "handler"}}},
	}
}

func run(o options) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (containerd, BPF)")
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("-output %q: want text or json", o.output)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if nested.Inside() {
		if err := nested.SetUp(); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "demo: a node inside a container: pid %d in a new pid namespace, cgroup namespace rooted at %s (the host's view)\n",
			os.Getpid(), os.Getenv(nested.Env))
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rt, err := containerd.ResolveRuntime(ctx, o.runtime)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "demo: starting a private containerd (OCI runtime %s) ...\n", rt)
	h, err := containerd.New(ctx, containerd.Config{Logger: log, LogLevel: "warn", Runtime: rt, CgroupDriver: o.cgroupDriver})
	if err != nil {
		return err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if err := h.Close(cctx); err != nil {
			fmt.Fprintln(os.Stderr, "demo: cleanup:", err)
		}
	}()
	fmt.Fprintf(os.Stderr, "demo: %s\n", h.Versions)
	if h.CgroupDriver == containerd.CgroupDriverSystemd {
		fmt.Fprintf(os.Stderr, "demo: systemd cgroup driver: pods are slices under %s, containers scopes (runc asks systemd for them)\n", h.CgroupRoot)
	}
	if h.PureV2 {
		fmt.Fprintf(os.Stderr, "demo: pure cgroup v2 host: containers get %s=1 (as from a kubelet); the OOM pod's kill is a group kill\n", containerd.OOMGroupKey)
	}

	metricsAddr := o.metricsAddr
	if metricsAddr == defaultMetricsAddr {
		metricsAddr = freeAddr(metricsAddr)
	}
	args := []string{"--cgroup-root", h.CgroupRoot, "--runtime-endpoint", h.Endpoint, "--no-api",
		"--metrics-addr", metricsAddr, "--output", "json", "--log-level", "info",
		"--state-dir=", // no checkpoint: each demo run is a fresh node's first tracer
	}
	if o.record != "" {
		args = append([]string{"record", o.record}, args...)
	}
	tr := exec.Command(o.tracer, args...)
	// The demo reads the tracer's spans; OTLP would take them elsewhere.
	tr.Env = withoutOTLP(os.Environ())
	stdout, err := tr.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := tr.StderrPipe()
	if err != nil {
		return err
	}
	if err := tr.Start(); err != nil {
		return fmt.Errorf("start tracer: %w", err)
	}
	spans := newCollector()
	var printer *console.Printer
	if o.output == "text" {
		printer = console.New(os.Stdout, console.Config{Format: console.FormatText, Verbose: o.verbose})
	}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		readSpans(stdout, spans, printer)
	}()
	ready := make(chan struct{})
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "level=INFO") || strings.Contains(line, "probes attached") {
				fmt.Fprintln(os.Stderr, line)
			}
			if !once && strings.Contains(line, "probes attached") {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-stderrDone: // the tracer exited (its error is above)
		<-readDone
		return fmt.Errorf("tracer exited before it was ready: %w", tr.Wait())
	case <-time.After(60 * time.Second):
		_ = tr.Process.Kill()
		_ = tr.Wait()
		return errors.New("tracer did not become ready")
	}
	fmt.Fprintf(os.Stderr, "demo: tracer ready; metrics on http://%s/metrics\n", metricsAddr)

	var ld *load.Load // nil: no load (Stop is nil-safe)
	if o.load {
		ld, err = load.Start(ctx, load.Config{ExecPerSecond: o.execRate, Max: 15 * time.Minute,
			Logf: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "demo: "+f+"\n", a...) }})
		if err != nil {
			_ = tr.Process.Kill()
			_ = tr.Wait()
			return err
		}
		defer ld.Stop()
	}

	scs := scenarios()
	failed := map[string]error{}
	for i := range scs {
		s := &scs[i]
		if ctx.Err() != nil {
			break
		}
		fmt.Fprintf(os.Stderr, "demo: scenario: %s\n", s.title)
		if err := s.fn(ctx, h, &s.want); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %s: %v\n", s.title, err)
			failed[s.want.pod] = err
			continue
		}
		// The pod's root span ends its trace: wait for it (the tracer
		// settles exits and CNI runs first), then go on.
		if !spans.waitRoot(s.want.pod, 30*time.Second) {
			fmt.Fprintf(os.Stderr, "demo: %s: no root span for %s 30 s after its teardown\n", s.title, s.want.pod)
		}
		time.Sleep(500 * time.Millisecond) // the printer's block lands before the next scenario's lines
	}
	ld.Stop()
	_ = tr.Process.Signal(syscall.SIGINT)
	<-readDone
	werr := tr.Wait()
	if printer != nil {
		printer.Close()
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if werr != nil {
		return fmt.Errorf("tracer: %w", werr)
	}
	if !o.check {
		return nil
	}
	return verdicts(os.Stderr, spans, scs, failed, rt.Name)
}

// verdicts prints one line per pod and says whether every trace was right.
func verdicts(w io.Writer, spans *collector, scs []scenario, failed map[string]error, rtName string) error {
	all := spans.all()
	var wrong []string
	fmt.Fprintf(w, "demo: checking %d traces (%d spans; runtime %s):\n", len(scs), len(all), rtName)
	for _, s := range scs {
		v := check(all, s.want)
		pidProblems, n := runPIDs.check(all, s.want.pod)
		v.problems = append(v.problems, pidProblems...)
		if n > 0 && len(pidProblems) == 0 {
			v.summary += fmt.Sprintf("; pid = CRI's (%d runs)", n)
		}
		if err := failed[s.want.pod]; err != nil {
			v.problems = append([]string{"the scenario itself failed: " + err.Error()}, v.problems...)
		}
		if len(v.problems) == 0 {
			fmt.Fprintf(w, "demo: ok    %-14s %s: %s\n", v.pod, s.title, v.summary)
			continue
		}
		wrong = append(wrong, v.pod)
		fmt.Fprintf(w, "demo: WRONG %-14s %s:\n", v.pod, s.title)
		for _, p := range v.problems {
			fmt.Fprintf(w, "demo:         - %s\n", p)
		}
	}
	for _, b := range spans.bad {
		fmt.Fprintf(w, "demo: tracer output that is not a span: %s\n", b)
	}
	if len(wrong) > 0 {
		return fmt.Errorf("%d of %d traces are wrong: %s", len(wrong), len(scs), strings.Join(wrong, ", "))
	}
	if len(spans.bad) > 0 {
		return fmt.Errorf("%d lines of tracer output were not spans", len(spans.bad))
	}
	fmt.Fprintf(w, "demo: all %d traces are right\n", len(scs))
	return nil
}

// readSpans parses the tracer's JSON lines; in text mode it renders them
// with the console printer, in JSON mode it passes them through.
func readSpans(r io.Reader, c *collector, printer *console.Printer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		s, err := console.ParseJSON(line)
		if err != nil {
			c.mu.Lock()
			c.bad = append(c.bad, fmt.Sprintf("%s (%v)", line, err))
			c.mu.Unlock()
			os.Stdout.Write(append(line, '\n'))
			continue
		}
		if printer != nil {
			printer.Emit(s)
		} else {
			os.Stdout.Write(append(line, '\n'))
		}
		c.add(s)
	}
}

const defaultMetricsAddr = "127.0.0.1:9464"

// freeAddr is addr when nothing listens there, else a free port on
// 127.0.0.1 (a tracer or another demo already holds 9464).
func freeAddr(addr string) string {
	l, err := net.Listen("tcp", addr)
	if err == nil {
		l.Close()
		return addr
	}
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return addr
	}
	defer l.Close()
	fmt.Fprintf(os.Stderr, "demo: %s is taken; the tracer's metrics go to %s\n", addr, l.Addr())
	return l.Addr().String()
}

func withoutOTLP(env []string) []string {
	out := env[:0:0]
	for _, e := range env {
		if !strings.HasPrefix(e, "OTEL_EXPORTER_OTLP_") {
			out = append(out, e)
		}
	}
	return out
}

func pod(ctx context.Context, h *containerd.Harness, name string) (*containerd.Pod, error) {
	return h.RunPodSandbox(ctx, containerd.PodSpec{Name: name, Namespace: "demo"})
}

func graceful(ctx context.Context, h *containerd.Harness, _ *podWant) error {
	p, err := pod(ctx, h, "web")
	if err != nil {
		return err
	}
	id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "server",
		Command: gracefulCmd})
	if err != nil {
		return err
	}
	runPIDs.record(ctx, h, "demo/web", id)
	time.Sleep(1500 * time.Millisecond)
	if err := h.StopContainer(ctx, id, 30*time.Second); err != nil {
		return err
	}
	return h.TeardownPod(ctx, p.ID, 0)
}

func stubborn(ctx context.Context, h *containerd.Harness, _ *podWant) error {
	p, err := pod(ctx, h, "stubborn")
	if err != nil {
		return err
	}
	id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "app", Command: stubbornCmd})
	if err != nil {
		return err
	}
	runPIDs.record(ctx, h, "demo/stubborn", id)
	time.Sleep(1500 * time.Millisecond)
	if err := h.StopContainer(ctx, id, 3*time.Second); err != nil {
		return err
	}
	return h.TeardownPod(ctx, p.ID, 0)
}

func oom(ctx context.Context, h *containerd.Harness, w *podWant) error {
	p, err := pod(ctx, h, "hungry")
	if err != nil {
		return err
	}
	cmd := oomCmd
	if h.PureV2 {
		cmd = oomGroupCmd
		w.runs[0].args = cmd
	}
	id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "eater", MemoryLimitBytes: 32 << 20,
		Command: cmd})
	if err != nil {
		return err
	}
	runPIDs.record(ctx, h, "demo/hungry", id)
	var cg string
	if h.PureV2 {
		if cg, err = checkOOMGroupSet(ctx, h, p, id); err != nil {
			return err
		}
	}
	if _, err := h.WaitExited(ctx, id); err != nil {
		return err
	}
	if h.PureV2 {
		kills, err := checkOOMGroupKilled(p)
		if err != nil {
			return err
		}
		// The trace must name the container's own cgroup as the one whose
		// limit ran out, and tell each of the kernel's OOM kills.
		w.runs[0].oomScope, w.runs[0].oomMemcg, w.runs[0].oomKills = "container", cg, kills
	}
	time.Sleep(1500 * time.Millisecond)
	return h.TeardownPod(ctx, p.ID, 0)
}

// crashloop restarts a failing container with a growing delay, as the
// kubelet's back-off does (10 s, 20 s, ... there; 1 s, 2 s here).
func crashloop(ctx context.Context, h *containerd.Harness, _ *podWant) error {
	p, err := pod(ctx, h, "crasher")
	if err != nil {
		return err
	}
	backoff := time.Second
	for attempt := uint32(0); attempt < uint32(crashAttempt); attempt++ {
		id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "app", Attempt: attempt,
			Command: crashCmd})
		if err != nil {
			return err
		}
		runPIDs.record(ctx, h, "demo/crasher", id)
		if _, err := h.WaitExited(ctx, id); err != nil {
			return err
		}
		if attempt < uint32(crashAttempt)-1 {
			time.Sleep(backoff)
			backoff *= 2
		}
	}
	time.Sleep(1500 * time.Millisecond)
	return h.TeardownPod(ctx, p.ID, 0)
}

func inPodKill(ctx context.Context, h *containerd.Harness, _ *podWant) error {
	p, err := pod(ctx, h, "victim")
	if err != nil {
		return err
	}
	id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "app",
		Command: victimCmd})
	if err != nil {
		return err
	}
	runPIDs.record(ctx, h, "demo/victim", id)
	time.Sleep(1500 * time.Millisecond)
	// PID 1 of a pid namespace cannot be killed from inside it: the tracer
	// shows the SIGKILL generated, by whom, and ignored.
	if _, err := h.ExecSync(ctx, id, []string{"kill", "-9", "1"}, 10*time.Second); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if err := h.StopContainer(ctx, id, 10*time.Second); err != nil {
		return err
	}
	return h.TeardownPod(ctx, p.ID, 0)
}

// runNested runs this demo again as the first process of a node inside a
// container (test/harness/nested): containerd, the CRI client (this demo,
// the node's kubelet) and the tracer in new pid, mount and cgroup
// namespaces, the cgroup namespace's root a cgroup of the demo's own. The
// node's TMPDIR is its own too, so a harness inside and one outside never
// take each other's state for a stale one's.
func runNested() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (containerd, BPF, namespaces)")
	}
	if err := nested.Check(); err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	tmp, err := os.MkdirTemp("", "podchron-node-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	node, err := nested.Prepare("/" + filepath.Base(tmp))
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		_ = node.Close()
		return err
	}
	fmt.Fprintf(os.Stderr, "demo: nested: a node in new pid, mount and cgroup namespaces, cgroup root %s\n", node.Root)
	cmd := node.Command(ctx, self, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	err = cmd.Run()
	if cerr := node.Close(); cerr != nil {
		fmt.Fprintln(os.Stderr, "demo: nested: cleanup:", cerr)
	}
	if err != nil {
		return fmt.Errorf("the nested node: %w", err)
	}
	return nil
}
