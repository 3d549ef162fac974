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
// start_without_times, not a silent gap in the trace.
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
}
