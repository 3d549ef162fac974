// Package runtime_test drives pods through a real containerd the way a
// kubelet does (no API server), with podchron's real probes, CRI watcher and
// lifecycle model, and asserts the spans it emits.
//
// Every scenario runs once per OCI runtime (subtests runc, runc-upstream,
// crun; see matrix_test.go), each with its own containerd, and
// TestSpanTreesAcrossRuntimes checks that podchron tells the same story on
// all of them.
package runtime_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	crifact "github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/cgroupfs"
	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/cri"
	"github.com/podchron/podchron/internal/pipeline"
	"github.com/podchron/podchron/internal/probe"
	"github.com/podchron/podchron/internal/record"
	"github.com/podchron/podchron/test/harness/containerd"
)

var recordDir = flag.String("record-dir", "", "write each scenario's input stream (on Debian's runc) here (golden inputs for internal/correlate)")

type spans struct {
	mu  sync.Mutex
	all []span.Span
}

func (s *spans) Emit(sp span.Span) {
	s.mu.Lock()
	s.all = append(s.all, sp)
	s.mu.Unlock()
}

func (s *spans) trace(uid string) []span.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := span.TraceIDForPod(uid)
	var out []span.Span
	for _, sp := range s.all {
		if sp.TraceID == id {
			out = append(out, sp)
		}
	}
	return out
}

func (s *spans) wait(t *testing.T, uid, name string) span.Span {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, sp := range s.trace(uid) {
			if sp.Name == name {
				return sp
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	dump(t, s.trace(uid))
	t.Fatalf("no %q span for pod %s", name, uid)
	return span.Span{}
}

func find(all []span.Span, name string) []span.Span {
	var out []span.Span
	for _, sp := range all {
		if sp.Name == name || strings.HasPrefix(sp.Name, name+" ") {
			out = append(out, sp)
		}
	}
	return out
}

func dump(t *testing.T, all []span.Span) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimRight(spansText(all), "\n"), "\n") {
		t.Log(l)
	}
}

// spansText is one line per span (start order) with every attribute, and
// one per span event.
func spansText(all []span.Span) string {
	all = append([]span.Span(nil), all...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Start.Before(all[j].Start) })
	var b strings.Builder
	for _, sp := range all {
		var a []string
		for _, x := range sp.Attrs {
			a = append(a, fmt.Sprintf("%s=%v", x.Key, x.Value))
		}
		fmt.Fprintf(&b, "  %-22s %8.3fs %-5s %s %s\n", sp.Name, sp.Duration().Seconds(), sp.Status, sp.StatusMessage, strings.Join(a, " "))
		for _, ev := range sp.Events {
			var ea []string
			for _, x := range ev.Attrs {
				ea = append(ea, fmt.Sprintf("%s=%v", x.Key, x.Value))
			}
			fmt.Fprintf(&b, "      • %+.3fs %s %s\n", ev.Time.Sub(sp.Start).Seconds(), ev.Name, strings.Join(ea, " "))
		}
	}
	return b.String()
}

type env struct {
	h     *containerd.Harness
	spans *spans
	exits *exits
}

// exits are the containers the tracer's runtime source reported exited.
// A kubelet removes a container only after its own relist has seen it
// exited (its garbage collection works from that view), so the runtime's
// word on the exit (reason, finish time) always reaches a watcher that
// polls as often; the scenarios stop and remove in that order too
// (stopAndTeardown), not as fast as one test can call the CRI.
type exits struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (x *exits) add(id string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.seen == nil {
		x.seen = map[string]bool{}
	}
	x.seen[id] = true
}

func (x *exits) has(id string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.seen[id]
}

// tee passes src's inputs on and records the exits among them.
func (x *exits) tee(src pipeline.Source) pipeline.Source {
	return func(ctx context.Context, out chan<- fact.Input) error {
		mid := make(chan fact.Input)
		errc := make(chan error, 1)
		go func() { errc <- src(ctx, mid); close(mid) }()
		for in := range mid {
			if r := in.Runtime; r != nil && r.Container != nil && r.Container.State == crifact.StateExited {
				x.add(r.Container.ID)
			}
			select {
			case out <- in:
			case <-ctx.Done():
				// Keep draining mid until src returns.
			}
		}
		return <-errc
	}
}

// stopAndTeardown stops the container id within grace, waits until the
// tracer's runtime source has reported it exited (as a kubelet's relist
// sees an exit before its GC removes the container), then tears the pod
// down.
func (e *env) stopAndTeardown(ctx context.Context, t *testing.T, pod *containerd.Pod, id string, grace time.Duration) {
	t.Helper()
	if err := e.h.StopContainer(ctx, id, grace); err != nil {
		t.Fatal(err)
	}
	e.waitExitSeen(ctx, t, id)
	if err := e.h.TeardownPod(ctx, pod.ID, 0); err != nil {
		t.Fatal(err)
	}
}

// waitExitSeen waits until the tracer's runtime source reported container
// id exited.
func (e *env) waitExitSeen(ctx context.Context, t *testing.T, id string) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !e.exits.has(id) {
		select {
		case <-ctx.Done():
			t.Fatalf("the tracer's runtime watcher never reported container %.12s exited: %v", id, ctx.Err())
		case <-tick.C:
		}
	}
}

// start runs containerd (with the OCI runtime rt; zero: the harness
// default), the probes and the pipeline for one scenario. With -record-dir
// and a scenario name, the input stream is recorded as <scenario>.jsonl.
func start(t *testing.T, rt containerd.Runtime, scenario string, extra ...span.Sink) *env {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (BPF, containerd)")
	}
	if err := probe.Preflight(); err != nil {
		t.Skipf("kernel cannot run the probes: %v", err)
	}
	h := containerd.Start(t, containerd.Config{Runtime: rt})
	t.Logf("OCI runtime %s: %s", h.Runtime, h.Versions)
	cfg := probe.DefaultConfig()
	cfg.CgroupRoots = []string{h.CgroupRoot}
	cfg.PollInterval = 20 * time.Millisecond
	p, err := probe.Load(cfg)
	if err != nil {
		t.Fatalf("load probes: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	src, err := p.NewSource()
	if err != nil {
		t.Fatal(err)
	}
	sp := &spans{}
	var sink span.Sink = sp
	if len(extra) > 0 {
		sink = span.SinkFunc(func(s span.Span) {
			sp.Emit(s)
			for _, x := range extra {
				x.Emit(s)
			}
		})
	}
	corr := correlate.New(correlate.Config{NodeName: "test-node", Sink: sink, CgroupRoots: []string{h.CgroupRoot}})
	seed, err := pipeline.Seed(p.Layout(), []string{h.CgroupRoot}, time.Now(), "test-node")
	if err != nil {
		t.Fatal(err)
	}
	var rec *record.Writer
	if *recordDir != "" && scenario != "" {
		f, err := os.Create(filepath.Join(*recordDir, scenario+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		if rec, err = record.NewWriter(f); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	kick := make(chan struct{}, 1)
	ex := &exits{}
	go func() {
		done <- pipeline.Run(ctx, pipeline.Config{
			Kernel:     src,
			Counters:   p.Counters,
			Seed:       seed,
			Correlator: corr,
			Record:     rec,
			Tick:       200 * time.Millisecond,
			Sources:    map[string]pipeline.Source{"runtime": ex.tee(criSource(h.Endpoint, kick))},
			// As the tracer does: a container's end brings the next
			// runtime poll forward.
			RuntimeKick: kick,
			// As the tracer does: the kernel and the runtime report
			// progress, so the model handles their facts in time order
			// however late either arrives.
			Progress: []string{fact.SourceKernel, fact.SourceRuntime},
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("pipeline: %v", err)
		}
		src.Close()
		c, _ := p.Counters()
		for typ, n := range c {
			if n.Lost > 0 {
				t.Errorf("kernel lost %d %s events", n.Lost, typ)
			}
		}
	})
	return &env{h: h, spans: sp, exits: ex}
}

// criSource is the tracer's runtime source: the CRI watcher's changes, then
// each poll's snapshot time as the runtime's progress; kick brings a poll
// forward.
func criSource(endpoint string, kick <-chan struct{}) pipeline.Source {
	return pipeline.CRI(cri.WatchConfig{Endpoint: endpoint, Interval: 200 * time.Millisecond, Kick: kick}, 250*time.Millisecond)
}

// gracefulPod runs a pod whose container handles SIGTERM, stops it the way
// a kubelet does and returns the pod and its root span.
func (e *env) gracefulPod(t *testing.T, name string) (*containerd.Pod, span.Span) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod, err := e.h.RunPodSandbox(ctx, containerd.PodSpec{Name: name, Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.h.RunContainer(ctx, pod, containerd.ContainerSpec{Name: "app",
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"}})
	if err != nil {
		t.Fatal(err)
	}
	e.spans.wait(t, pod.UID, names.SpanPodStartup)
	e.stopAndTeardown(ctx, t, pod, id, 10*time.Second)
	return pod, e.spans.wait(t, pod.UID, "pod")
}

// TestGracefulStop: a container that handles SIGTERM stops in time.
func TestGracefulStop(t *testing.T) { runOnRuntimes(t, gracefulStop) }

var gracefulStop = scenario{name: "graceful-stop", run: runGracefulStop}

func runGracefulStop(t *testing.T, e *env) []span.Span {
	pod, root := e.gracefulPod(t, "graceful")
	all := e.spans.trace(pod.UID)
	dump(t, all)

	if root.Parent != (span.SpanID{}) || root.Duration() <= 0 {
		t.Errorf("root: %+v", root)
	}
	adds := find(all, "cni.ADD")
	if len(adds) < 2 {
		t.Errorf("want the CNI ADD plugin runs (loopback, bridge, host-local), got %d", len(adds))
	}
	sandbox := find(all, names.SpanPodSandbox)
	if len(sandbox) != 1 {
		t.Fatalf("want 1 sandbox span, got %d", len(sandbox))
	}
	for _, a := range adds {
		if a.Parent != sandbox[0].SpanID || a.Attr(names.ProcessExitCode) != int64(0) {
			t.Errorf("CNI ADD %s: parent %s exit %v", a.Name, a.Parent, a.Attr(names.ProcessExitCode))
		}
	}
	run := find(all, names.SpanContainerRun)
	if len(run) != 1 || run[0].Attr(names.ExitCause) != "completed" || run[0].Attr(names.ProcessExitCode) != int64(0) || run[0].Attr(names.K8sContainerName) != "app" {
		t.Fatalf("run: %+v", run)
	}
	// The runtime reported the exit before the container was removed
	// (stopAndTeardown), so its reason is on the run.
	if r := run[0].Attr(names.K8sContainerStatusLastTerminatedReason); r != "Completed" {
		t.Errorf("run: %s = %v, want the runtime's Completed", names.K8sContainerStatusLastTerminatedReason, r)
	}
	stop := find(all, names.SpanContainerStop)
	if len(stop) != 1 {
		t.Fatalf("want 1 stop span, got %d", len(stop))
	}
	if stop[0].Attr(names.SignalDisposition) != "handler" || stop[0].Attr(names.Sigkill) != false || stop[0].Attr(names.SignalSenderKind) != "runtime" {
		t.Errorf("stop: %v", stop[0].Attrs)
	}
	if d := stop[0].Duration(); d > 2*time.Second {
		t.Errorf("graceful stop took %s", d)
	}
	dels := find(all, "cni.DEL")
	if len(dels) < 2 {
		t.Errorf("want CNI DEL runs, got %d", len(dels))
	}
	term := find(all, names.SpanPodTermination)
	if len(term) != 1 || term[0].Attr(names.GracePeriodOverrun) != false {
		t.Errorf("termination: %+v", term)
	}
	for _, sp := range all {
		if sp.TraceID != span.TraceIDForPod(pod.UID) {
			t.Errorf("%s in another trace", sp.Name)
		}
	}
	return all
}

// TestIgnoredSIGTERM: PID 1 without a TERM handler ignores SIGTERM; the
// runtime kills it with SIGKILL when the timeout runs out.
func TestIgnoredSIGTERM(t *testing.T) { runOnRuntimes(t, ignoredSIGTERM) }

var ignoredSIGTERM = scenario{name: "ignored-sigterm", run: runIgnoredSIGTERM}

func runIgnoredSIGTERM(t *testing.T, e *env) []span.Span {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod, err := e.h.RunPodSandbox(ctx, containerd.PodSpec{Name: "stubborn", Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.h.RunContainer(ctx, pod, containerd.ContainerSpec{Name: "app", Command: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	e.spans.wait(t, pod.UID, names.SpanPodStartup)
	e.stopAndTeardown(ctx, t, pod, id, 2*time.Second)
	e.spans.wait(t, pod.UID, "pod")
	all := e.spans.trace(pod.UID)
	dump(t, all)
	stop := find(all, names.SpanContainerStop)
	if len(stop) != 1 {
		t.Fatalf("want 1 stop span, got %d", len(stop))
	}
	s := stop[0]
	if s.Attr(names.SignalDisposition) != "ignored" || s.Attr(names.Sigkill) != true || s.Status != span.StatusError {
		t.Errorf("stop: status %s attrs %v", s.Status, s.Attrs)
	}
	if d := s.Duration(); d < 1900*time.Millisecond || d > 5*time.Second {
		t.Errorf("stop took %s, want about the 2 s timeout", d)
	}
	run := find(all, names.SpanContainerRun)
	if len(run) != 1 || run[0].Attr(names.ExitCause) != "killed_by_runtime" || run[0].Attr(names.SignalName) != "SIGKILL" {
		t.Errorf("run: %+v", run)
	}
	term := find(all, names.SpanPodTermination)
	if len(term) != 1 || term[0].Attr(names.GracePeriodOverrun) != true {
		t.Errorf("termination: %+v", term)
	}
	return all
}

// TestOOMKilled: a container over its memory limit is killed by the kernel.
func TestOOMKilled(t *testing.T) { runOnRuntimes(t, oomKilled) }

var oomKilled = scenario{name: "oom-killed", run: runOOMKilled}

func runOOMKilled(t *testing.T, e *env) []span.Span {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pod, err := e.h.RunPodSandbox(ctx, containerd.PodSpec{Name: "hungry", Namespace: "batch"})
	if err != nil {
		t.Fatal(err)
	}
	id, err := e.h.RunContainer(ctx, pod, containerd.ContainerSpec{Name: "eater", MemoryLimitBytes: 32 << 20,
		Command: []string{"sh", "-c", "sleep 0.5; dd if=/dev/zero of=/dev/null bs=256M count=1"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := e.h.WaitExited(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if c.Reason != "OOMKilled" {
		t.Fatalf("runtime says %q, want OOMKilled", c.Reason)
	}
	run := e.spans.wait(t, pod.UID, names.SpanContainerRun)
	e.waitExitSeen(ctx, t, id)
	if err := e.h.TeardownPod(ctx, pod.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.spans.wait(t, pod.UID, "pod")
	all := e.spans.trace(pod.UID)
	dump(t, all)
	// The harness sets no pod-level limit (the kubelet does, see the e2e
	// scenario): the container's own limit is the one that ran out.
	memcg, _ := run.Attr(names.OOMMemcg).(string)
	if run.Attr(names.ExitCause) != "oom_killed" || run.Attr(names.OOMScope) != "container" ||
		!strings.HasSuffix(memcg, "/"+id) || run.Status != span.StatusError {
		t.Errorf("run: status %s attrs %v", run.Status, run.Attrs)
	}
	var oomEvent bool
	for _, ev := range run.Events {
		oomEvent = oomEvent || ev.Name == names.EventOOMKill
	}
	if !oomEvent {
		t.Errorf("no oom_kill event on the run span: %+v", run.Events)
	}
	return all
}

func TestMain(m *testing.M) {
	flag.Parse()
	if _, err := cgroupfs.Detect(cgroupfs.ModeAuto); err != nil {
		fmt.Println("no cgroups:", err)
	}
	code := m.Run()
	stopTestLoad()
	writeMatrixReport()
	os.Exit(code)
}
