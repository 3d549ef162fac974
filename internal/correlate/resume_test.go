package correlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
)

// Resume, never re-decide: a pod first seen by a tracer that started after
// the pod's containers did (a tracer restart, a relist, a node reboot) had
// its start-up decided by whoever watched it then. From what the API shows
// now the model cannot tell that start-up again: it emits no pod.startup
// and observes no start-up duration for it; what happens from then on is
// traced.

// oldPod: a pod created 72 h before the tracer started, its app container
// started 5 s after creation; the tracer (with a 20 s start-up give-up
// time) starts now and first sees it as the API shows it.
func oldPod(t *testing.T, timeout time.Duration) (*sim, time.Time) {
	s := newSim(t)
	withStartupTimeout(s, timeout)
	born := s.now.Add(-72 * time.Hour)
	s.info.InitContainers = nil
	s.info.CreatedAt = born
	s.info.Phase = "Running"
	s.info.Conditions = []fact.Condition{
		{Type: "PodScheduled", Status: "True", LastTransitionTime: born},
		{Type: "Initialized", Status: "True", LastTransitionTime: born},
	}
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", ContainerID: "c0ffee02",
		State: fact.ContainerState{Running: &fact.Running{StartedAt: born.Add(5 * time.Second)}}}}
	s.in(fact.Input{Start: &fact.Start{At: s.now, NodeName: "node-a"}})
	return s, born
}

func (s *sim) setCond(typ, status string, at time.Time) {
	for i, cd := range s.info.Conditions {
		if cd.Type == typ {
			s.info.Conditions[i] = fact.Condition{Type: typ, Status: status, LastTransitionTime: at}
			return
		}
	}
	s.info.Conditions = append(s.info.Conditions, fact.Condition{Type: typ, Status: status, LastTransitionTime: at})
}

// checkNoStartup fails on a pod.startup span or a start-up observation.
func checkNoStartup(t *testing.T, s *sim, why string) {
	t.Helper()
	if f := s.find(names.SpanPodStartup); len(f) > 0 {
		t.Errorf("%s: a pod.startup decided again (%s, %s): %s", why, f[0].Status, f[0].End.Sub(f[0].Start), f[0].StatusMessage)
	}
	for _, c := range s.o.calls {
		if strings.HasPrefix(c, "startup ") || strings.HasPrefix(c, "phase ") {
			t.Errorf("%s: start-up observed: %q", why, c)
		}
	}
}

// A NotReady pod (its readiness probe fails) older than --startup-timeout:
// not a 72 h pod.startup ERROR gave_up.
func TestResumeNotReadyPastTimeout(t *testing.T) {
	s, born := oldPod(t, 20*time.Second)
	s.setCond("Ready", "False", born)
	s.pod()
	s.tick(time.Minute)
	s.tick(time.Minute)
	checkNoStartup(t, s, "NotReady since before the tracer")
}

// An Evicted pod that was Ready for days, still in the API (Failed): not
// "pod failed before Ready". Its Ready condition turned False an hour ago,
// long after it was initialized: it had been Ready.
func TestResumeEvictedAfterDaysReady(t *testing.T) {
	s, born := oldPod(t, 20*time.Second)
	evicted := s.now.Add(-time.Hour)
	s.info.Phase, s.info.Reason, s.info.Message = "Failed", "Evicted", "The node was low on resource: memory."
	s.setCond("Ready", "False", evicted)
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", ContainerID: "c0ffee02",
		State: fact.ContainerState{Terminated: &fact.Terminated{ExitCode: 137, Reason: "Error",
			StartedAt: born.Add(5 * time.Second), FinishedAt: evicted}}}}
	s.pod()
	s.tick(time.Minute)
	checkNoStartup(t, s, "Failed after days Ready")
}

// Ready -> NotReady -> Ready across the restart: seen NotReady, then Ready
// again; not an OK 72 h start-up, nor a 72 h histogram observation.
func TestResumeReadyAgain(t *testing.T) {
	s, _ := oldPod(t, 0) // never give up: the start-up would end at the new Ready
	s.setCond("Ready", "False", s.now.Add(-10*time.Minute))
	s.pod()
	s.tick(30 * time.Second)
	s.setCond("Ready", "True", s.now)
	s.pod()
	s.tick(5 * time.Second)
	checkNoStartup(t, s, "Ready again after NotReady")
}

// A node reboot: the pod object is old, the tracer starts with the node,
// and the kubelet runs the pod in a new sandbox. That sandbox is a
// recreated sandbox (pod.sandbox, recreated), not a start-up.
func TestResumeSandboxAfterReboot(t *testing.T) {
	s, born := oldPod(t, 20*time.Second)
	s.setCond("Ready", "False", s.now.Add(-time.Minute))
	s.pod()
	s.at(3 * time.Second)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now, Sandbox: &cri.Sandbox{ID: "sb2", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
	s.at(10 * time.Millisecond)
	s.pid++
	cni := s.pid
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginCNI, TGID: cni, PID: cni, Comm: "bridge"}, Filename: "/opt/cni/bin/bridge",
		CNI: &kernel.CNIRun{Command: "ADD", ContainerID: "sb2", IfName: "eth0", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop"}})
	s.at(40 * time.Millisecond)
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginCNI, TGID: cni, PID: cni}})
	s.ids["app"] = "c0ffee03"
	s.container("app", "c0ffee03", 1)
	s.at(time.Second)
	s.setCond("Ready", "True", s.now)
	s.pod()
	s.tick(5 * time.Second)
	checkNoStartup(t, s, "a node reboot's new sandbox for a 72 h old pod ("+born.String()+")")
	sb := s.find(names.SpanPodSandbox)
	if len(sb) != 1 || sb[0].Attr(names.SandboxRecreated) != true {
		t.Errorf("want one recreated pod.sandbox, got %d:\n%s", len(sb), render(s.spans))
	}
}

// The restarted tracer's first runtime poll can name the pod (its old
// sandbox, its exited container) before the API server's list does: the
// pod is still one first seen after its start-up.
func TestResumeRuntimeBeforeAPI(t *testing.T) {
	s, born := oldPod(t, 20*time.Second)
	evicted := s.now.Add(-time.Hour)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: born}}})
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerExited, At: s.now,
		Container: &cri.Container{ID: "c0ffee02", SandboxID: "sb1", Name: "app", PodUID: s.uid, ExitCode: 137, Reason: "Error", CreatedAt: born, StartedAt: born, FinishedAt: evicted}}})
	s.info.Phase, s.info.Reason = "Failed", "Evicted"
	s.setCond("Ready", "False", evicted)
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", ContainerID: "c0ffee02",
		State: fact.ContainerState{Terminated: &fact.Terminated{ExitCode: 137, Reason: "Error", StartedAt: born.Add(5 * time.Second), FinishedAt: evicted}}}}
	s.pod()
	s.tick(time.Minute)
	checkNoStartup(t, s, "runtime's old facts before the API's")
}
