package faults

// The clock-step case: the node's wall clock steps by -1 h or +1 h while
// pods run and wait to get Ready, on a daemon-shaped pipeline without
// probes: pipeline.Run (its forwarders placing each source's times on the
// timeline with the Placer, its kernel reader stamping events with the
// timeline) over a clock.Timeline on a fake clock source, the lifecycle
// model (internal/correlate) with the daemon's metrics recorder, and the
// real OTLP exporter configured from OTEL_* against a scripted collector.
// Fake time is free: the pipeline's own ticker is set beyond the run, and
// the case ticks it as the pipeline does every 500 ms (re-measure the
// wall clock's step, then a tick input), waiting for each input to be
// handled (the pipeline's heartbeat) so that the run is deterministic.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/clock"
	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/export/metrics"
	"github.com/podchron/podchron/internal/export/otlp"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/pipeline"
	"github.com/podchron/podchron/internal/span"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

const (
	// stepTick is the daemon's tick (cmd/tracer: pipeline.Config.Tick).
	stepTick = 500 * time.Millisecond
	// stepStartupTimeout is --startup-timeout 1m.
	stepStartupTimeout = time.Minute
	// stepAt is when the wall clock steps, since the start: 10 s into the
	// run pods' 30 s and the start-up pods' 40 s wait.
	stepAt = 10 * time.Second
	// stepEnd is the fake time the case runs for.
	stepEnd = 80 * time.Second
)

// Pod kinds of the case.
const (
	kindRun     = "run"     // Ready at 2 s, its container runs 30 s
	kindStartup = "startup" // not Ready for 40 s, then Ready
	kindNever   = "never"   // never Ready: the give-up timer ends its start-up
)

// stepPod is one pod of the case and the times (on the timeline) its
// spans must show.
type stepPod struct {
	kind       string
	uid        string
	cgroup     uint64 // its container's cgroup
	pid        uint32
	ctr, sb    string
	info       fact.PodInfo
	created    time.Time
	ctrCreated time.Time
	exited     time.Time
}

// stepNode is the node: its fake clocks, the pipeline's input channels,
// and the heartbeat count the case waits on.
type stepNode struct {
	t       *testing.T
	src     *clock.Fake
	tl      *clock.Timeline
	start   time.Time // the timeline at the start
	kernel  chan kernel.Event
	runtime chan fact.Input
	api     chan fact.Input
	ticks   chan fact.Input
	beats   atomic.Uint64
	notify  chan struct{}
	sent    uint64 // inputs handed to the pipeline
}

func newStepNode(t *testing.T) *stepNode {
	src := clock.NewFake(7*time.Hour, time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC))
	n := &stepNode{t: t, src: src, tl: clock.New(src), kernel: make(chan kernel.Event), runtime: make(chan fact.Input),
		api: make(chan fact.Input), ticks: make(chan fact.Input), notify: make(chan struct{}, 1)}
	n.start = n.tl.Now()
	return n
}

// Next makes the node the pipeline's kernel source (probe.Source).
func (n *stepNode) Next(ctx context.Context) (kernel.Event, error) {
	select {
	case ev := <-n.kernel:
		return ev, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close is probe.Source's.
func (n *stepNode) Close() error { return nil }

// source is a pipeline source sending what the case puts on ch.
func source(ch <-chan fact.Input) pipeline.Source {
	return func(ctx context.Context, out chan<- fact.Input) error {
		for {
			select {
			case <-ctx.Done():
				return nil
			case in := <-ch:
				select {
				case out <- in:
				case <-ctx.Done():
					return nil
				}
			}
		}
	}
}

// beat is the pipeline's heartbeat: one after each input handled.
func (n *stepNode) beat() {
	n.beats.Add(1)
	select {
	case n.notify <- struct{}{}:
	default:
	}
}

// handed waits until the pipeline has handled every input sent.
func (n *stepNode) handed() {
	n.t.Helper()
	limit := time.NewTimer(5 * time.Second)
	defer limit.Stop()
	for n.beats.Load() < n.sent {
		select {
		case <-n.notify:
		case <-limit.C:
			n.t.Fatalf("the pipeline handled %d of %d inputs in 5 s", n.beats.Load(), n.sent)
		}
	}
}

// send hands one input (or kernel event) to the pipeline and waits until
// it is handled.
func send[T any](n *stepNode, ch chan<- T, v T) {
	n.t.Helper()
	select {
	case ch <- v:
	case <-time.After(5 * time.Second):
		n.t.Fatal("the pipeline took no input for 5 s")
	}
	n.sent++
	n.handed()
}

// elapsed is the timeline's time since the start (a wall step moves it not).
func (n *stepNode) elapsed() time.Duration { return n.tl.Now().Sub(n.start) }

func (n *stepNode) advanceTo(d time.Duration) {
	if e := n.elapsed(); d > e {
		n.src.Advance(d - e)
	}
}

// tick is the pipeline's tick: the wall clock's step re-measured, then a
// tick input.
func (n *stepNode) tick() {
	n.tl.Remeasure()
	send(n, n.ticks, fact.Input{Time: n.tl.Now(), Tick: true})
}

// kernelEvent: the kernel stamps CLOCK_BOOTTIME, the decoder places it
// on the timeline; the pipeline's kernel reader stamps the input.
func (n *stepNode) kernelEvent(ev kernel.Event) {
	ev.Hdr().Time = n.tl.Wall(uint64(n.src.Boot()))
	send(n, n.kernel, ev)
}

// runtimeEvent: the runtime's times read from the node's wall clock.
func (n *stepNode) runtimeEvent(ev *cri.Event) {
	ev.At = n.src.Real()
	send(n, n.runtime, fact.Input{Time: n.tl.Now(), Runtime: ev})
}

func (n *stepNode) pod(p *stepPod) {
	info := p.info
	send(n, n.api, fact.Input{Time: n.tl.Now(), Pod: &info})
}

// apiNow is the API server's clock (it does not step with the node's):
// whole seconds, as metav1.Time.
func (n *stepNode) apiNow() time.Time { return n.tl.Now().Truncate(time.Second) }

// action is something the case does at a time since the start.
type action struct {
	at time.Duration
	do func()
}

// play does the actions in time order, ticking every stepTick until end;
// an action due at a tick's time comes before the tick.
func (n *stepNode) play(acts []action, end time.Duration) {
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].at < acts[j].at })
	i := 0
	for at := stepTick; at <= end; at += stepTick {
		for ; i < len(acts) && acts[i].at <= at; i++ {
			n.advanceTo(acts[i].at)
			acts[i].do()
		}
		n.advanceTo(at)
		n.tick()
	}
}

func newStepPod(kind string, i int) *stepPod {
	uid := fmt.Sprintf("5e1f0c1c-0000-4000-8000-%012d", i)
	name := fmt.Sprintf("%s-%d", kind, i)
	return &stepPod{kind: kind, uid: uid, cgroup: uint64(9100 + 10*i), pid: uint32(5000 + i),
		ctr: fmt.Sprintf("c0ffee%02d", i), sb: fmt.Sprintf("sb%02d", i),
		info: fact.PodInfo{UID: uid, Name: name, Namespace: "shop", NodeName: "node-a", OwnerKind: "ReplicaSet",
			TerminationGracePeriodSeconds: 30, Phase: "Pending", Containers: []fact.ContainerSpec{{Name: "app"}}}}
}

// startPod: the pod at c, its sandbox and pod cgroup; its container's
// cgroup and creation 100 ms later, its init's exec and start 20 ms after.
func (n *stepNode) startPod(p *stepPod, c time.Duration) []action {
	podCgroup := "/kubepods/burstable/pod" + p.uid
	return []action{
		{c, func() {
			p.created = n.tl.Now()
			p.info.CreatedAt = n.apiNow()
			n.pod(p)
			n.kernelEvent(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Origin: kernel.OriginWatched}, ID: p.cgroup - 1, Path: podCgroup})
			n.runtimeEvent(&cri.Event{Type: cri.EventSandboxCreated,
				Sandbox: &cri.Sandbox{ID: p.sb, PodUID: p.uid, PodName: p.info.Name, PodNamespace: "shop", CreatedAt: n.src.Real()}})
		}},
		{c + 100*time.Millisecond, func() {
			p.ctrCreated = n.tl.Now()
			n.kernelEvent(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Origin: kernel.OriginWatched}, ID: p.cgroup, Path: podCgroup + "/" + p.ctr})
			n.runtimeEvent(&cri.Event{Type: cri.EventContainerCreated,
				Container: &cri.Container{ID: p.ctr, SandboxID: p.sb, Name: "app", PodUID: p.uid, CreatedAt: n.src.Real()}})
		}},
		{c + 120*time.Millisecond, func() {
			n.kernelEvent(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: p.cgroup, TGID: p.pid, PID: p.pid, PPID: 1, Comm: "app"},
				Filename: "/app", Args: []string{"/app"}})
			n.runtimeEvent(&cri.Event{Type: cri.EventContainerStarted,
				Container: &cri.Container{ID: p.ctr, SandboxID: p.sb, Name: "app", PodUID: p.uid, StartedAt: n.src.Real()}})
		}},
	}
}

// ready: the kubelet sets Ready (its condition time from the node's wall
// clock).
func (n *stepNode) ready(p *stepPod, at time.Duration) action {
	return action{at, func() {
		now := n.src.Real()
		p.info.Phase = "Running"
		p.info.Conditions = []fact.Condition{{Type: "Ready", Status: "True", LastTransitionTime: now},
			{Type: "ContainersReady", Status: "True", LastTransitionTime: now}}
		n.pod(p)
	}}
}

// exit: the container's init exits (code, or killed by sig); the runtime
// reports it with its exit code and reason.
func (n *stepNode) exit(p *stepPod, code int, sig syscall.Signal, rtCode int32, reason string) {
	p.exited = n.tl.Now()
	n.kernelEvent(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginWatched, CgroupID: p.cgroup, TGID: p.pid, PID: p.pid}, NSInit: true, ExitCode: code, Signal: sig})
	n.runtimeEvent(&cri.Event{Type: cri.EventContainerExited,
		Container: &cri.Container{ID: p.ctr, SandboxID: p.sb, Name: "app", PodUID: p.uid, ExitCode: rtCode, Reason: reason, FinishedAt: n.src.Real()}})
}

// deletePod: the deletion (30 s grace); a running container gets SIGTERM
// from runc 20 ms later and exits 30 ms after; the pod is gone 500 ms
// after the deletion.
func (n *stepNode) deletePod(p *stepPod, at time.Duration, running bool) []action {
	acts := []action{{at, func() {
		grace := int64(30)
		del := n.apiNow().Add(30 * time.Second)
		p.info.DeletionTimestamp, p.info.DeletionGracePeriodSeconds = &del, &grace
		n.pod(p)
	}}}
	if running {
		acts = append(acts, action{at + 20*time.Millisecond, func() {
			n.kernelEvent(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget, TGID: 77, Comm: "runc", CgroupID: 1},
				Signal: syscall.SIGTERM, Code: kernel.SIUser, Result: kernel.SignalDelivered, Disposition: kernel.DispositionDefault,
				TargetTGID: p.pid, TargetPID: p.pid, TargetCgroupID: p.cgroup, TargetNSInit: true})
		}}, action{at + 50*time.Millisecond, func() { n.exit(p, 0, syscall.SIGTERM, 143, "Error") }})
	}
	return append(acts, action{at + 500*time.Millisecond, func() {
		p.info.Deleted = true
		n.pod(p)
	}})
}

// schedule is the case's pods and what happens to them: three pods whose
// container runs 30 s, two not Ready for 40 s, one never Ready; the wall
// clock steps by step at stepAt.
func (n *stepNode) schedule(step time.Duration) ([]*stepPod, []action) {
	var pods []*stepPod
	var acts []action
	for i, kind := range []string{kindRun, kindStartup, kindRun, kindStartup, kindRun, kindNever} {
		p := newStepPod(kind, i)
		pods = append(pods, p)
		c := time.Duration(i+1) * 150 * time.Millisecond
		acts = append(acts, n.startPod(p, c)...)
		switch kind {
		case kindRun:
			acts = append(acts, n.ready(p, c+2*time.Second),
				action{c + 100*time.Millisecond + 30*time.Second, func() { n.exit(p, 0, 0, 0, "Completed") }})
			acts = append(acts, n.deletePod(p, c+33*time.Second, false)...)
		case kindStartup:
			acts = append(acts, n.ready(p, c+40*time.Second))
			acts = append(acts, n.deletePod(p, c+45*time.Second, true)...)
		case kindNever:
			acts = append(acts, n.deletePod(p, c+70*time.Second, true)...)
		}
	}
	acts = append(acts, action{stepAt, func() { n.src.StepWall(step) }})
	return pods, acts
}

// runPipeline runs the daemon-shaped pipeline over n until the case has
// played, then stops it as the daemon stops (the model shut down, the
// exporter flushed). It returns how many spans the model emitted.
func (n *stepNode) runPipeline(e *otlp.Exporter, acts []action) int {
	offered := 0
	sink := span.SinkFunc(func(s span.Span) { offered++; e.Emit(s) })
	corr := correlate.New(correlate.Config{NodeName: "node-a", Sink: sink, Observer: metrics.NewRecorder(metrics.Limits{}),
		StuckAfter: 30 * time.Second, StartupTimeout: stepStartupTimeout})
	seed := []fact.Input{{Time: n.tl.Now(), Start: &fact.Start{At: n.tl.Now(), NodeName: "node-a"}}}
	n.sent = uint64(len(seed))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, pipeline.Config{
			Kernel: n, Seed: seed, Correlator: corr, Timeline: n.tl, Heartbeat: n.beat,
			Sources: map[string]pipeline.Source{pipeline.SourceRuntime: source(n.runtime), pipeline.SourceAPI: source(n.api), "tick": source(n.ticks)},
			// The case ticks (fake time); the pipeline's own ticker
			// (real time) must not.
			Tick:   time.Hour,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				n.t.Errorf("pipeline: %v", err)
			}
		})
	}
	defer stop() // a failed wait (Fatal) stops the pipeline all the same
	n.handed()
	n.play(acts, stepEnd)
	stop()
	flush(n.t, e, time.Minute)
	return offered
}

// stepResult is what one run of the case shows.
type stepResult struct {
	runs     []time.Duration // the run pods' container.run
	startups []time.Duration // the start-up pods' pod.startup
	gaveUp   time.Duration   // the never-Ready pod's pod.startup end, after its creation
	falseNR  int             // "not Ready after" on a pod that got Ready
}

// TestClockStep: the node's wall clock steps by -1 h and by +1 h 10 s
// into the run pods' 30 s and the start-up pods' 40 s wait. Every span the
// model emits is exported and reaches the collector once; container.run
// keeps the 30 s the container ran (not 0 s, not 1h0m30s); the start-ups
// end OK at their Ready (no false "not Ready after 1m0s"); the never-Ready
// pod's give-up timer fires a minute after its creation.
func TestClockStep(t *testing.T) {
	for _, p := range protocols {
		for _, step := range []time.Duration{-time.Hour, time.Hour} {
			t.Run(p+"/"+step.String(), func(t *testing.T) {
				began := time.Now()
				c := newCollector(t, p)
				c.mu.Lock()
				c.keep = true
				c.mu.Unlock()
				e := startExporter(t, c, otlp.Config{})
				n := newStepNode(t)
				pods, acts := n.schedule(step)
				offered := n.runPipeline(e, acts)
				accountFor(t, e, c, offered)
				c.mu.Lock()
				kept := slices.Clone(c.kept)
				c.mu.Unlock()
				res := checkStepSpans(t, pods, kept)
				exported, dropped, _ := e.Stats()
				_, dups, _ := c.stats()
				report(t, "step", step, "offered", offered, "exported", exported, "dropped", dropped, "received_twice", dups,
					"container_run", durations(res.runs), "startup_ok", durations(res.startups), "false_not_ready", res.falseNR,
					"gave_up_after", res.gaveUp, "wall", time.Since(began).Round(time.Millisecond))
				if exported != uint64(offered) || dropped != 0 {
					t.Errorf("exported %d, dropped %d (%+v) of %d spans", exported, dropped, e.Drops(), offered)
				}
			})
		}
	}
}

func durations(ds []time.Duration) string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%.3fs", d.Seconds()))
	}
	return strings.Join(out, ",")
}

func protoDuration(s *tracepb.Span) time.Duration {
	return time.Duration(s.GetEndTimeUnixNano() - s.GetStartTimeUnixNano())
}

// checkStepSpans checks the spans the collector received, pod by pod.
func checkStepSpans(t *testing.T, pods []*stepPod, kept []*tracepb.Span) stepResult {
	t.Helper()
	var res stepResult
	for _, p := range pods {
		tid := span.TraceIDForPod(p.uid)
		byName := map[string][]*tracepb.Span{}
		for _, s := range kept {
			if bytes.Equal(s.GetTraceId(), tid[:]) {
				byName[s.GetName()] = append(byName[s.GetName()], s)
				if p.kind != kindNever && strings.Contains(s.GetStatus().GetMessage(), "not Ready after") {
					res.falseNR++
					t.Errorf("%s: %s %q on a pod that got Ready", p.info.Name, s.GetName(), s.GetStatus().GetMessage())
				}
			}
		}
		for _, name := range []string{names.SpanPod, names.SpanPodStartup, names.SpanContainerRun} {
			if len(byName[name]) != 1 {
				t.Errorf("%s: %d %s spans at the collector, want 1", p.info.Name, len(byName[name]), name)
			}
		}
		if len(byName[names.SpanPodStartup]) != 1 || len(byName[names.SpanContainerRun]) != 1 {
			continue
		}
		res.check(t, p, byName[names.SpanPodStartup][0], byName[names.SpanContainerRun][0])
	}
	return res
}

// check checks one pod's start-up and container run.
func (res *stepResult) check(t *testing.T, p *stepPod, st, run *tracepb.Span) {
	t.Helper()
	failed := st.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR
	switch p.kind {
	case kindRun:
		d := protoDuration(run)
		res.runs = append(res.runs, d)
		if want := p.exited.Sub(p.ctrCreated); d != want || run.GetStartTimeUnixNano() != uint64(p.ctrCreated.UnixNano()) {
			t.Errorf("%s: container.run from %v for %s, want from %v for %s", p.info.Name,
				time.Unix(0, int64(run.GetStartTimeUnixNano())).UTC(), d, p.ctrCreated.UTC(), want)
		}
		if failed {
			t.Errorf("%s: pod.startup ERROR %q", p.info.Name, st.GetStatus().GetMessage())
		}
	case kindStartup:
		d := protoDuration(st)
		res.startups = append(res.startups, d)
		if failed || d < 40*time.Second || d > 41*time.Second {
			t.Errorf("%s: pod.startup %s %q for %s, want OK for 40 s", p.info.Name, st.GetStatus().GetCode(), st.GetStatus().GetMessage(), d)
		}
	case kindNever:
		res.gaveUp = time.Duration(int64(st.GetEndTimeUnixNano()) - p.created.UnixNano())
		want := "not Ready after " + stepStartupTimeout.String()
		if !failed || !strings.Contains(st.GetStatus().GetMessage(), want) {
			t.Errorf("%s: pod.startup %s %q, want ERROR %q", p.info.Name, st.GetStatus().GetCode(), st.GetStatus().GetMessage(), want)
		}
		if res.gaveUp < stepStartupTimeout || res.gaveUp > stepStartupTimeout+stepTick {
			t.Errorf("%s: gave up %s after its creation, want within a tick (%s) of %s", p.info.Name, res.gaveUp, stepTick, stepStartupTimeout)
		}
	}
}
