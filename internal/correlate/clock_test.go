package correlate_test

// Clock steps and skew, driven through the tracer's real time conversion
// (internal/clock's Timeline with a fake clock source, the pipeline's
// Placer) into the model, as the daemon does: inputs and kernel events on
// the boot clock from the start's epoch, the runtime's and the kubelet's
// times read from the node's wall clock, the API server's from its own.
// Before the timeline, inputs were stamped with the wall clock, kernel
// events followed it within 10 s and the runtime's times were taken as
// read: each test here failed that way (see each test's reason).

import (
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/clock"
	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/pipeline"
	"github.com/podchron/podchron/internal/span"
)

// clockSim is a node whose clocks the test controls.
type clockSim struct {
	t       *testing.T
	src     *clock.Fake
	tl      *clock.Timeline
	rt, api *pipeline.Placer
	c       *correlate.Correlator
	spans   []span.Span
	o       *obs
	// apiAhead: the API server's clock runs this far ahead of the
	// timeline (it does not step with the node's).
	apiAhead time.Duration
	info     fact.PodInfo
	pid      uint32
}

const clockCgroup = 9100

func newClockSim(t *testing.T, apiAhead time.Duration) *clockSim {
	s := &clockSim{t: t, src: clock.NewFake(3*time.Hour, time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)), o: &obs{}, apiAhead: apiAhead, pid: 5000}
	s.tl = clock.New(s.src)
	s.rt, s.api = pipeline.NewPlacer(s.tl, pipeline.SourceRuntime), pipeline.NewPlacer(s.tl, pipeline.SourceAPI)
	s.c = correlate.New(correlate.Config{NodeName: "node-a", Observer: s.o, StuckAfter: 10 * time.Second, StartupTimeout: time.Minute,
		Sink: span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) })})
	s.info = fact.PodInfo{UID: podUID, Name: "web-7d9f", Namespace: "shop", NodeName: "node-a", OwnerKind: "ReplicaSet",
		CreatedAt: s.apiNow(), TerminationGracePeriodSeconds: 3, Phase: "Pending", Containers: []fact.ContainerSpec{{Name: "app"}}}
	return s
}

// apiNow is the API server's clock: whole seconds (metav1.Time).
func (s *clockSim) apiNow() time.Time { return s.tl.Now().Add(s.apiAhead).Truncate(time.Second) }

// at lets d pass; the pipeline re-measures the wall clock's step at its
// ticks, so a step is known from the next input on.
func (s *clockSim) at(d time.Duration) { s.src.Advance(d); s.tl.Remeasure() }

func (s *clockSim) feed(pl *pipeline.Placer, in fact.Input) {
	in.Time = s.tl.Now()
	pl.Place(&in)
	s.c.Handle(in)
}

// kernel: the kernel stamps CLOCK_BOOTTIME; the decoder's clock is the timeline.
func (s *clockSim) kernel(ev kernel.Event) {
	ev.Hdr().Time = s.tl.Wall(uint64(s.src.Boot()))
	s.feed(nil, fact.Input{Kernel: ev})
}

func (s *clockSim) pod() { cp := s.info; s.feed(s.api, fact.Input{Pod: &cp}) }

func (s *clockSim) ready() {
	s.info.Conditions = append(s.info.Conditions, fact.Condition{Type: "Ready", Status: "True", LastTransitionTime: s.src.Real()},
		fact.Condition{Type: "ContainersReady", Status: "True", LastTransitionTime: s.src.Real()})
	s.pod()
}

func (s *clockSim) tick(d time.Duration) {
	s.at(d)
	s.feed(nil, fact.Input{Tick: true})
}

// start: pod, sandbox, the app's cgroup, its create and start (runtime
// times from the node's wall clock) and its init's exec.
func (s *clockSim) start() uint32 {
	s.pod()
	s.kernel(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Origin: kernel.OriginWatched}, ID: 8100, Path: "/kubepods/burstable/pod" + podUID})
	s.feed(s.rt, fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.src.Real(), Sandbox: &cri.Sandbox{ID: "sb1", PodUID: podUID, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.src.Real()}}})
	s.at(100 * time.Millisecond)
	s.kernel(&kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Origin: kernel.OriginWatched}, ID: clockCgroup, Path: "/kubepods/burstable/pod" + podUID + "/c0ffee02"})
	s.feed(s.rt, fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.src.Real(),
		Container: &cri.Container{ID: "c0ffee02", SandboxID: "sb1", Name: "app", PodUID: podUID, CreatedAt: s.src.Real()}}})
	s.at(20 * time.Millisecond)
	s.pid++
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: clockCgroup, TGID: s.pid, PID: s.pid, PPID: 1, Comm: "app"},
		Filename: "/app", Args: []string{"/app"}})
	s.feed(s.rt, fact.Input{Runtime: &cri.Event{Type: cri.EventContainerStarted, At: s.src.Real(),
		Container: &cri.Container{ID: "c0ffee02", SandboxID: "sb1", Name: "app", PodUID: podUID, StartedAt: s.src.Real()}}})
	return s.pid
}

func (s *clockSim) exit(pid uint32, code int, sig syscall.Signal, reason string) {
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginWatched, CgroupID: clockCgroup, TGID: pid, PID: pid}, NSInit: true, ExitCode: code, Signal: sig})
	s.feed(s.rt, fact.Input{Runtime: &cri.Event{Type: cri.EventContainerExited, At: s.src.Real(),
		Container: &cri.Container{ID: "c0ffee02", SandboxID: "sb1", Name: "app", PodUID: podUID, ExitCode: int32(code), Reason: reason, FinishedAt: s.src.Real()}}})
}

func (s *clockSim) signal(pid uint32, sig syscall.Signal, result kernel.SignalResult) {
	s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget, TGID: 77, Comm: "runc", CgroupID: 1},
		Signal: sig, Code: kernel.SIUser, Result: result, Disposition: kernel.DispositionDefault, TargetTGID: pid, TargetPID: pid, TargetCgroupID: clockCgroup, TargetNSInit: true})
}

func (s *clockSim) find(name string) []span.Span {
	var out []span.Span
	for _, sp := range s.spans {
		if sp.Name == name {
			out = append(out, sp)
		}
	}
	return out
}

func (s *clockSim) one(name string) span.Span {
	s.t.Helper()
	f := s.find(name)
	if len(f) != 1 {
		s.t.Fatalf("want one %s span, got %d\n%s", name, len(f), render(s.spans))
	}
	return f[0]
}

var wallSteps = []time.Duration{-time.Hour, time.Hour}

// A wall clock step in the middle of a container's run: its container.run
// keeps the 30 s it ran. Reason: with times from the wall clock, -1 h made
// the run end before it started (0 s: the exit's time before the start's)
// and +1 h made it 1h0m30s.
func TestClockStepDuringRun(t *testing.T) {
	for _, step := range wallSteps {
		t.Run(step.String(), func(t *testing.T) {
			s := newClockSim(t, 0)
			begin := s.tl.Now().Add(100 * time.Millisecond) // created
			app := s.start()
			s.ready()
			s.tick(10 * time.Second)
			s.src.StepWall(step)
			s.tick(10 * time.Second)
			s.tick(10 * time.Second)
			s.exit(app, 1, 0, "Error")
			s.tick(2 * time.Second)
			run := s.one(names.SpanContainerRun)
			if !run.Start.Equal(begin) || run.Duration() != 30020*time.Millisecond {
				t.Errorf("container.run %s..%s (%s), want from %s for 30.02s", run.Start, run.End, run.Duration(), begin)
			}
			if st := s.one(names.SpanPodStartup); st.Status != span.StatusOK {
				t.Errorf("pod.startup %s %q", st.Status, st.StatusMessage)
			}
		})
	}
}

// A wall clock step during a start-up wait: the pod gets Ready 40 s after
// its creation and its pod.startup says so. Reason: with times from the
// wall clock, +1 h gave a false "not Ready after 1m0s" at the first input
// after the step, and -1 h a start-up ending before it began.
func TestClockStepDuringStartup(t *testing.T) {
	for _, step := range wallSteps {
		t.Run(step.String(), func(t *testing.T) {
			s, created := steppedWhileUnready(t, step)
			for range 6 {
				s.tick(5 * time.Second)
			}
			s.ready()
			s.tick(time.Second)
			s.tick(time.Second)
			st := s.one(names.SpanPodStartup)
			if st.Status != span.StatusOK || !st.Start.Equal(created) {
				t.Errorf("pod.startup %s %q from %s, want OK from %s", st.Status, st.StatusMessage, st.Start, created)
			}
			if d := st.Duration(); d < 40*time.Second || d > 41*time.Second {
				t.Errorf("pod.startup took %s, want 40s", d)
			}
		})
	}
}

// A wall clock step while a pod never gets Ready: the give-up timer fires
// one minute after its creation, not an hour early or late. Reason: with
// inputs stamped by the wall clock, -1 h froze the model's time (it never
// goes back) and the timer fired an hour late; +1 h fired it at once.
func TestClockStepTimersFireOnTime(t *testing.T) {
	for _, step := range wallSteps {
		t.Run(step.String(), func(t *testing.T) {
			s, created := steppedWhileUnready(t, step)
			for range 9 {
				s.tick(5 * time.Second)
				if len(s.find(names.SpanPodStartup)) > 0 {
					t.Fatalf("pod.startup ended %s after creation, before the 1m timeout", s.tl.Now().Sub(created))
				}
			}
			for range 4 {
				s.tick(5 * time.Second)
			}
			st := s.one(names.SpanPodStartup)
			if st.Status != span.StatusError || st.StatusMessage == "" {
				t.Errorf("pod.startup %s %q, want ERROR not Ready", st.Status, st.StatusMessage)
			}
			if d := st.End.Sub(created); d < time.Minute || d > 66*time.Second {
				t.Errorf("gave up %s after creation, want within a tick or two of 1m", d)
			}
		})
	}
}

// The node's clock 2 s behind the API server's: the deletion, stamped by
// the API server, reads 2 s after the SIGTERM it caused. Reason: before,
// pod.termination started at the API's deletion time, after the SIGTERM,
// and the SIGKILL at the grace period's end was not counted as the pod's
// overrun (a stop before the termination counted as a liveness restart's).
// Two ways hold it now: the API offset measured from the pod's own
// creation and deletion (mapped), and, where no offset is measured yet,
// the model's rule that a termination starts at the earlier of the
// deletion and the first stop signal after it (unmapped).
func TestClockNodeBehindAPIServer(t *testing.T) {
	for _, mapped := range []bool{true, false} {
		name := map[bool]string{true: "offset measured", false: "offset unmeasured"}[mapped]
		t.Run(name, func(t *testing.T) {
			s := newClockSim(t, 2*time.Second)
			if !mapped {
				s.api = nil
			}
			app := s.start()
			s.ready()
			s.tick(10*time.Second + 300*time.Millisecond)
			grace := int64(3)
			del := s.apiNow().Add(3 * time.Second)
			s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
			s.at(5 * time.Millisecond)
			s.pod()
			s.at(20 * time.Millisecond)
			sigterm := s.tl.Now()
			s.signal(app, syscall.SIGTERM, kernel.SignalIgnored)
			s.at(3 * time.Second)
			s.signal(app, syscall.SIGKILL, kernel.SignalDelivered)
			s.exit(app, 0, syscall.SIGKILL, "Error")
			s.at(500 * time.Millisecond)
			s.info.Deleted = true
			s.pod()
			term := s.one(names.SpanPodTermination)
			if term.Start.After(sigterm) {
				t.Errorf("pod.termination starts %s after its SIGTERM", term.Start.Sub(sigterm))
			}
			if term.Attr(names.GracePeriodOverrun) != true || term.Status != span.StatusError {
				t.Errorf("pod.termination %s %q overrun %v, want the overrun", term.Status, term.StatusMessage, term.Attr(names.GracePeriodOverrun))
			}
			if d := term.Duration(); d > 5*time.Second {
				t.Errorf("pod.termination took %s, want about 3.5s", d)
			}
		})
	}
}

// steppedWhileUnready starts a pod that is not Ready yet and steps the wall
// clock 10 s after its creation; it returns the sim and the creation time.
func steppedWhileUnready(t *testing.T, step time.Duration) (*clockSim, time.Time) {
	t.Helper()
	s := newClockSim(t, 0)
	created := s.tl.Now()
	s.start()
	s.tick(10 * time.Second)
	s.src.StepWall(step)
	return s, created
}
