package correlate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact/cri"
)

// withStartupTimeout gives the sim's model a give-up time.
func withStartupTimeout(s *sim, d time.Duration) {
	s.c = correlate.New(correlate.Config{NodeName: "node-a", Observer: s.o, StuckAfter: 10 * time.Second, StartupTimeout: d,
		Sink: span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) })})
}

// sandboxUp: the pod scheduled, its sandbox and network up.
func (s *sim) sandboxUp() {
	s.pod()
	s.at(100 * time.Millisecond)
	s.cond("PodScheduled")
	s.mkdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
	s.at(10 * time.Millisecond)
	s.pid++
	cni := s.pid
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginCNI, TGID: cni, PID: cni, Comm: "bridge"}, Filename: "/opt/cni/bin/bridge",
		CNI: &kernel.CNIRun{Command: "ADD", ContainerID: "sb1", IfName: "eth0", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop"}})
	s.at(40 * time.Millisecond)
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginCNI, TGID: cni, PID: cni}})
}

func (s *sim) waiting(init bool, name, reason, msg string) {
	st := fact.ContainerStatus{Name: name, State: fact.ContainerState{Waiting: &fact.Waiting{Reason: reason, Message: msg}}}
	if init {
		s.info.InitStatuses = []fact.ContainerStatus{st}
	} else {
		s.info.Statuses = []fact.ContainerStatus{st}
	}
	s.pod()
}

func (s *sim) deleteNow() {
	grace := int64(3)
	del := s.now.Add(time.Duration(grace) * time.Second) // when the grace period ends
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
}

// An image that cannot be pulled: the pull is an ERROR span with the
// kubelet's reason, and the start-up ends as an ERROR at the deletion,
// with the sandbox and its network shown.
func TestStartupImagePullFailure(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.info.Containers[0].Image = "registry.invalid/app:1"
	s.sandboxUp()
	pullStart := s.now
	s.event("Pulling", "app", `Pulling image "registry.invalid/app:1"`)
	s.at(300 * time.Millisecond)
	failAt := s.now
	s.event("Failed", "app", `Failed to pull image "registry.invalid/app:1": failed to resolve reference: no such host`)
	s.event("Failed", "app", "Error: ErrImagePull")
	s.waiting(false, "app", "ErrImagePull", "failed to resolve reference")
	s.at(2 * time.Second)
	s.event("BackOff", "app", `Back-off pulling image "registry.invalid/app:1"`)
	s.waiting(false, "app", "ImagePullBackOff", `Back-off pulling image "registry.invalid/app:1"`)
	s.at(20 * time.Second)
	delAt := s.now
	s.deleteNow()
	s.tick(time.Second)
	st := s.one(names.SpanPodStartup)
	if st.Status != span.StatusError || !st.End.Equal(delAt) || st.Attr(names.WaitingReason) != "ImagePullBackOff" ||
		st.Attr(names.K8sContainerName) != "app" || st.Attr(names.StartupOutcome) != "terminated" ||
		!strings.Contains(st.StatusMessage, "ImagePullBackOff") {
		t.Errorf("start-up: %s %q end %s (deleted %s) %v", st.Status, st.StatusMessage, st.End, delAt, st.Attrs)
	}
	pl := s.one(names.SpanContainerImagePull)
	if pl.Status != span.StatusError || pl.Parent != st.SpanID || !pl.Start.Equal(pullStart) || pl.End.Before(failAt) ||
		pl.Attr(names.ContainerImageName) != "registry.invalid/app" || !slices.Equal(pl.Attr(names.ContainerImageTags).([]string), []string{"1"}) ||
		!strings.Contains(pl.StatusMessage, "no such host") {
		t.Errorf("pull: %s %q %s–%s %v", pl.Status, pl.StatusMessage, pl.Start, pl.End, pl.Attrs)
	}
	for _, name := range []string{names.SpanPodSandbox, "cni.ADD bridge", names.SpanPodScheduling} {
		if sp := s.one(name); sp.Status == span.StatusError {
			t.Errorf("%s: %s", name, sp.Status)
		}
	}
}

// A missing ConfigMap: no container ever runs; the give-up time ends the
// start-up with the waiting reason and message, while the pod lives on, and
// a later Ready is not lost.
func TestStartupGivesUpOnConfigError(t *testing.T) {
	s := newSim(t)
	withStartupTimeout(s, time.Minute)
	s.info.InitContainers = nil
	s.sandboxUp()
	s.waiting(false, "app", "CreateContainerConfigError", `configmap "settings" not found`)
	s.tick(30 * time.Second)
	if len(s.find(names.SpanPodStartup)) != 0 {
		t.Fatal("gave up before the timeout")
	}
	s.tick(31 * time.Second)
	s.tick(time.Second)
	st := s.one(names.SpanPodStartup)
	if st.Status != span.StatusError || st.Attr(names.StartupOutcome) != "gave_up" ||
		st.Attr(names.WaitingReason) != "CreateContainerConfigError" || !strings.Contains(st.StatusMessage, `configmap "settings" not found`) {
		t.Errorf("start-up: %s %q %v", st.Status, st.StatusMessage, st.Attrs)
	}
	if len(s.find("pod")) != 0 {
		t.Error("the pod ended when its start-up was given up")
	}
	// The ConfigMap appears; the pod becomes Ready after all.
	s.at(10 * time.Second)
	s.container("app", "c0ffee02", 0)
	s.cond("Ready")
	s.tick(2 * time.Second)
	s.c.Flush()
	var late bool
	for _, e := range s.one("pod").Events {
		late = late || e.Name == names.EventReadyAfterStartupGaveUp
	}
	if !late || len(s.find(names.SpanPodStartup)) != 1 {
		t.Errorf("a Ready after the give-up: root event %v, %d start-ups", late, len(s.find(names.SpanPodStartup)))
	}
}

// A readiness probe that never passes: the start-up names the container
// that runs but is not ready.
func TestStartupReadinessNeverPasses(t *testing.T) {
	s := newSim(t)
	withStartupTimeout(s, time.Minute)
	s.info.InitContainers = nil
	s.sandboxUp()
	s.container("app", "c0ffee02", 0)
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", State: fact.ContainerState{Running: &fact.Running{StartedAt: s.now}}}}
	s.pod()
	for range 8 {
		s.at(10 * time.Second)
		pr := s.exec("app", 99, "cat", "/tmp/ready")
		s.at(5 * time.Millisecond)
		s.exit("app", pr, 1, 0)
		s.tick(0)
	}
	st := s.one(names.SpanPodStartup)
	if st.Status != span.StatusError || st.Attr(names.WaitingReason) != "NotReady" || st.Attr(names.K8sContainerName) != "app" {
		t.Errorf("start-up: %s %q %v", st.Status, st.StatusMessage, st.Attrs)
	}
	if len(s.find(names.SpanContainerStart)) != 1 {
		t.Errorf("container.start spans: %d", len(s.find(names.SpanContainerStart)))
	}
}

// A Job's pod that does its work and completes before it is ever Ready: its
// start-up ends (not an error) and its run is complete.
func TestStartupJobCompletesBeforeReady(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.info.OwnerKind = "Job"
	s.sandboxUp()
	app := s.container("app", "c0ffee02", 0)
	s.at(500 * time.Millisecond)
	s.exit("app", app, 0, 0)
	exitAt := s.now
	s.cri(cri.EventContainerExited, "app", 0, "Completed")
	s.info.Phase = "Succeeded"
	s.pod()
	s.tick(2 * time.Second)
	st := s.one(names.SpanPodStartup)
	if st.Status == span.StatusError || st.Attr(names.StartupOutcome) != "completed" || !st.End.Equal(exitAt) {
		t.Errorf("start-up: %s %q end %s (exit %s) %v", st.Status, st.StatusMessage, st.End, exitAt, st.Attrs)
	}
	if run := s.one(names.SpanContainerRun); run.Attr(names.ExitCause) != "completed" {
		t.Errorf("run: %v", run.Attrs)
	}
}

// The kubelet's status at the deletion may no longer carry the waiting
// reason; the start-up still names it.
func TestStartupKeepsTheLastWaitingReason(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.sandboxUp()
	s.waiting(false, "app", "CreateContainerConfigError", `configmap "settings" not found`)
	s.at(5 * time.Second)
	s.waiting(false, "app", "ContainerCreating", "")
	s.deleteNow()
	s.tick(time.Second)
	st := s.one(names.SpanPodStartup)
	if st.Attr(names.WaitingReason) != "CreateContainerConfigError" {
		t.Errorf("start-up: %q %v", st.StatusMessage, st.Attrs)
	}
}

// A tracer that sees Ready while it settles, then the deletion resetting
// Ready to False: the start-up ended at Ready all the same.
func TestReadyThenDeletedWhileSettling(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.sandboxUp()
	s.container("app", "c0ffee02", 0)
	s.cond("Ready")
	s.at(200 * time.Millisecond)
	s.deleteNow()
	s.info.Conditions = s.info.Conditions[:len(s.info.Conditions)-1]
	s.info.Conditions = append(s.info.Conditions, fact.Condition{Type: "Ready", Status: "False", LastTransitionTime: s.now})
	s.pod()
	s.tick(3 * time.Second)
	if st := s.one(names.SpanPodStartup); st.Status == span.StatusError {
		t.Errorf("start-up: %s %q", st.Status, st.StatusMessage)
	}
}

// The kubelet's Events carry whole seconds: an "already present" pull
// stamped before the pod's first fact stays inside the pod's trace.
func TestPullSpanInsideThePod(t *testing.T) {
	s := newSim(t)
	s.now = s.now.Add(300 * time.Millisecond) // the pod's first fact is at .300
	s.info.CreatedAt = s.now
	pulled := s.now.Truncate(time.Second)
	s.pod()
	s.in(fact.Input{Event: &fact.K8sEvent{UID: "ev-pull", PodUID: s.uid, Reason: "Pulled", Container: "app",
		Message: `Container image "busybox" already present on machine`, FirstTime: pulled, LastTime: pulled, Count: 1}})
	s.startup()
	s.tick(3 * time.Second)
	st := s.one(names.SpanPodStartup)
	for _, sp := range s.find(names.SpanContainerImagePull) {
		if sp.Start.Before(st.Start) || sp.End.Before(sp.Start) {
			t.Errorf("%s [%s, %s] outside its pod.startup from %s", sp.Name, sp.Start, sp.End, st.Start)
		}
	}
}

// A start-up that ends (Ready) while an app container the API's status
// names has no time from the runtime or the kernel (no creation, no start)
// emits no container.start for it, and says so: the miss
// start_without_times, not a silent gap in the trace, and in the pod's own
// trace, not only in a node-wide count: its root carries a
// podchron.correlation_miss event naming the reason and the container.
func TestStartWithoutTimesIsCounted(t *testing.T) {
	s := newSim(t)
	s.sandboxUp()
	s.at(time.Second)
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", ContainerID: "c0ffee09", Ready: true}}
	s.cond("ContainersReady")
	s.cond("Ready")
	s.tick(2 * time.Second)
	s.one(names.SpanPodStartup)
	if got := s.find(names.SpanContainerStart); len(got) != 0 {
		t.Errorf("container.start without a creation or start time: %+v", got)
	}
	if n := s.c.Stats().Misses["start_without_times"]; n != 1 {
		t.Errorf("miss start_without_times %d, want 1", n)
	}
	s.deleteNow()
	s.info.Deleted = true
	s.pod()
	s.tick(time.Minute)
	evs := missEvents(s.one("pod"))
	if len(evs) != 1 || evs[0].Attr(names.MissReasonKey) != "start_without_times" ||
		evs[0].Attr(names.K8sContainerName) != "app" || evs[0].Attr(names.MissCount) != int64(1) {
		t.Errorf("root's miss events %+v, want one: start_without_times, app, 1", evs)
	}
}

// The kernel's records of an app container's start are lost (a full ring
// buffer, counted as lost), and the runtime's poll that first lists the
// container comes after the Ready it led to: its facts are keyed by the
// poll's snapshot time, after Ready's arrival, so the model handles Ready
// first. The start-up waits for the runtime's word on a running container
// it cannot date yet (bounded: the runtime's progress past a settle window
// ends the wait), and the runtime dates container.start; before, the
// start-up went out without it (the miss start_without_times, seen once in
// the e2e's scenario 52 under load).
func TestStartDatedByALateRuntimePoll(t *testing.T) {
	spans, c := lateRuntimePoll(true)
	var startup, start *span.Span
	for i, s := range spans {
		switch s.Name {
		case names.SpanPodStartup:
			startup = &spans[i]
		case names.SpanContainerStart:
			start = &spans[i]
		}
	}
	if startup == nil {
		t.Fatalf("no pod.startup; spans %v", spanNames(spans))
	}
	if start == nil {
		t.Fatalf("no container.start (misses %v); spans %v", c.Stats().Misses, spanNames(spans))
	}
	t0 := lateRuntimeT0
	if !start.Start.Equal(t0.Add(500*time.Millisecond)) || !start.End.Equal(t0.Add(520*time.Millisecond)) {
		t.Errorf("container.start %s..%s, want the runtime's creation and start (+500 ms..+520 ms from %s)", start.Start, start.End, t0)
	}
	if n := c.Stats().Misses["start_without_times"]; n != 0 {
		t.Errorf("miss start_without_times %d", n)
	}

	// The wait is bounded: a runtime that never lists the container (its
	// progress goes on) lets the start-up out once its progress passes the
	// settle window, without container.start, the miss counted.
	spans, c = lateRuntimePoll(false)
	if !slices.Contains(spanNames(spans), names.SpanPodStartup) {
		t.Fatalf("never listed: no pod.startup; spans %v", spanNames(spans))
	}
	if n := c.Stats().Misses["start_without_times"]; n != 1 {
		t.Errorf("never listed: miss start_without_times %d, want 1", n)
	}
}

var lateRuntimeT0 = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

// lateRuntimePoll replays the stream of TestStartDatedByALateRuntimePoll;
// lists: whether the runtime's late poll lists the container.
func lateRuntimePoll(lists bool) ([]span.Span, *correlate.Correlator) {
	t0 := lateRuntimeT0
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	var spans []span.Span
	c := correlate.New(correlate.Config{NodeName: "node-a", StuckAfter: 10 * time.Second,
		Sink: span.SinkFunc(func(s span.Span) { spans = append(spans, s) })})
	info := fact.PodInfo{UID: podUID, Name: "web", Namespace: "shop", NodeName: "node-a", CreatedAt: t0, RestartPolicy: "Always",
		Containers: []fact.ContainerSpec{{Name: "app"}}}
	pod := func(ms int) fact.Input { cp := info; return fact.Input{Time: at(ms), Pod: &cp} }
	progress := func(ms int, src string, until int) fact.Input {
		return fact.Input{Time: at(ms), Progress: &fact.Progress{Source: src, Until: at(until)}}
	}
	ctr := &cri.Container{ID: "c0ffee02", SandboxID: "sb1", Name: "app", PodUID: podUID, PodName: "web", PodNamespace: "shop",
		CreatedAt: at(500), StartedAt: at(520)}
	in := []fact.Input{
		{Time: t0, Start: &fact.Start{At: t0, NodeName: "node-a", Progress: []string{fact.SourceKernel, fact.SourceRuntime, fact.SourceAPI}}},
		progress(0, fact.SourceAPI, 0), progress(0, fact.SourceKernel, 0), progress(0, fact.SourceRuntime, 0),
		pod(10),
		{Time: at(100), Kernel: &kernel.CgroupEvent{Header: kernel.Header{Type: kernel.EventCgroupMkdir, Origin: kernel.OriginWatched, Time: at(100)},
			ID: 8000, Path: "/kubepods/burstable/pod" + podUID}},
		{Time: at(300), Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: at(300), Observed: at(300),
			Sandbox: &cri.Sandbox{ID: "sb1", PodUID: podUID, PodName: "web", PodNamespace: "shop", CreatedAt: at(110)}}},
		progress(300, fact.SourceRuntime, 300), progress(400, fact.SourceKernel, 350), progress(400, fact.SourceAPI, 400),
		// The app container is created at 500 ms and runs at 520 ms: the
		// kernel's records of it are lost. The runtime's next poll (1 s
		// later) lists it; the kubelet's status says Ready before that.
	}
	info.Conditions = []fact.Condition{{Type: "PodScheduled", Status: "True", LastTransitionTime: at(10)},
		{Type: "ContainersReady", Status: "True", LastTransitionTime: at(1000)}, {Type: "Ready", Status: "True", LastTransitionTime: at(1000)}}
	running := true
	info.Statuses = []fact.ContainerStatus{{Name: "app", ContainerID: "c0ffee02", Ready: true, Started: &running,
		State: fact.ContainerState{Running: &fact.Running{StartedAt: at(0)}}}}
	in = append(in, pod(1100), progress(1200, fact.SourceKernel, 1150), progress(1200, fact.SourceAPI, 1200))
	if lists {
		in = append(in,
			fact.Input{Time: at(1300), Runtime: &cri.Event{Type: cri.EventContainerCreated, At: at(500), Observed: at(1300), Container: ctr}},
			fact.Input{Time: at(1300), Runtime: &cri.Event{Type: cri.EventContainerStarted, At: at(520), Observed: at(1300), Container: ctr}})
	}
	in = append(in, progress(1300, fact.SourceRuntime, 1300))
	for ms := 1500; ms <= 5000; ms += 250 {
		in = append(in, progress(ms, fact.SourceKernel, ms-100), progress(ms, fact.SourceAPI, ms), progress(ms, fact.SourceRuntime, ms),
			fact.Input{Time: at(ms), Tick: true})
	}
	for _, x := range in {
		c.Handle(x)
	}
	return spans, c
}

func spanNames(ss []span.Span) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

// A start-up that ends unready (the pod deleted) while the kubelet's next
// attempt of a restarted container is created but not started: that
// attempt had not started within the start-up, so it has no
// container.start and is no miss. The earlier attempt's start stays. Seen
// in the e2e's scenario 20 under load (a startup-probe restart loop, the
// pod deleted between an attempt's creation and its start): the miss
// start_without_times was counted on a trace that lacked nothing.
func TestStartupEndsBeforeAnAttemptStarts(t *testing.T) {
	s := newSim(t)
	s.info.InitContainers = nil
	s.sandboxUp()
	s.at(time.Second)
	app := s.container("app", "c0ffee02", 0)
	s.at(2 * time.Second)
	s.gracefulStop("app", app, 30*time.Millisecond)
	s.at(300 * time.Millisecond)
	// The next attempt: created (its cgroup and the runtime's word), not
	// started when the deletion comes.
	s.cg["app"] = 9100
	s.ids["app"] = "c0ffee03"
	s.mkdir(9100, "/kubepods/burstable/pod"+s.uid+"/c0ffee03")
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now,
		Container: &cri.Container{ID: "c0ffee03", SandboxID: "sb1", Name: "app", Attempt: 1, PodUID: s.uid, CreatedAt: s.now}}})
	s.at(50 * time.Millisecond)
	s.deleteNow()
	s.tick(2 * time.Second)
	st := s.one(names.SpanPodStartup)
	if st.Attr(names.StartupOutcome) != names.StartupTerminated {
		t.Errorf("pod.startup outcome %v, want %s", st.Attr(names.StartupOutcome), names.StartupTerminated)
	}
	starts := s.find(names.SpanContainerStart)
	if len(starts) != 1 || starts[0].Attr(names.ContainerID) != "c0ffee02" {
		t.Errorf("container.start spans %v, want the first attempt's alone\n%s", starts, render(s.spans))
	}
	if n := s.c.Stats().Misses["start_without_times"]; n != 0 {
		t.Errorf("miss start_without_times %d, want 0", n)
	}
}
