package correlate_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/fact/cri"
)

// The kubelet recreates a pod's sandbox (SandboxChanged): the new sandbox
// and its network show as a span of their own; the old sandbox's removal
// does not end a forced deletion early.
func TestSandboxChanged(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.at(time.Second)
	// The pause process died: the kubelet stops the app, then runs a new
	// sandbox, whose CNI ADD comes before the runtime's poll names it.
	s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("app", app, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.event("SandboxChanged", "", "Pod sandbox changed, it will be killed and re-created.")
	s.at(200 * time.Millisecond)
	created := s.now
	s.pid++
	cni := s.pid
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginCNI, TGID: cni, PID: cni, Comm: "bridge"}, Filename: "/opt/cni/bin/bridge",
		CNI: &kernel.CNIRun{Command: "ADD", ContainerID: "sb2", IfName: "eth0", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop"}})
	s.at(40 * time.Millisecond)
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginCNI, TGID: cni, PID: cni}})
	s.at(100 * time.Millisecond)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now, Sandbox: &cri.Sandbox{ID: "sb2", PodUID: s.uid,
		PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: created}}})
	app2 := s.container("app", "c0ffee12", 1)
	s.tick(3 * time.Second)
	var recreated *span.Span
	for i, sp := range s.find(names.SpanPodSandbox) {
		if sp.Attr(names.SandboxRecreated) == true {
			recreated = &s.find(names.SpanPodSandbox)[i]
		}
	}
	if recreated == nil || recreated.Attr(names.ContainerID) != "sb2" || !recreated.Start.Equal(created) {
		t.Fatalf("no recreated sandbox span: %+v", s.find(names.SpanPodSandbox))
	}
	var adds int
	for _, sp := range s.spans {
		if sp.Name == "cni.ADD bridge" && sp.Parent == recreated.SpanID {
			adds++
		}
	}
	if adds != 1 {
		t.Errorf("%d cni.ADD spans under the new sandbox, want 1", adds)
	}
	// A forced deletion while the new attempt runs: the old sandbox's late
	// removal must not end the pod before its container does.
	del := s.now
	grace := int64(0)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	s.info.Deleted = true
	s.pod()
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxRemoved, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid}}})
	s.tick(3 * time.Second)
	if len(s.find("pod")) != 0 {
		t.Fatal("the old sandbox's removal ended the pod while its new container runs")
	}
	s.signal("app", app2, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("app", app2, 0, syscall.SIGKILL)
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.tick(3 * time.Second)
	s.one("pod")
}

// TestSandboxEndsWhenTheKubeletMovesOn: the sandbox span ends at its
// pause process's exec when that comes before the pod's first container,
// and no later than that container's creation when the exec comes after:
// runc's start returns once it has told runc init to exec, not after the
// exec, so the kubelet can have its RunPodSandbox answer and create the
// next container first (seen under load: the pause exec 93 ms after the
// init container's creation, e2e 1 on the 1.35 leg, 2026-12-06). The
// start-up's sandbox phase (its long pole) measures the same span.
func TestSandboxEndsWhenTheKubeletMovesOn(t *testing.T) {
	for _, late := range []bool{false, true} {
		s := newSim(t)
		var pauseAt time.Time
		s.pause = func(afterInit bool) {
			if afterInit != late {
				return
			}
			if !afterInit {
				s.at(5 * time.Millisecond)
			}
			s.cg["POD"] = 8500
			s.mkdir(8500, "/kubepods/burstable/pod"+s.uid+"/sb1")
			s.at(3 * time.Millisecond)
			pauseAt = s.now
			s.exec("POD", 1, "/pause")
		}
		s.startup()
		sb, in := s.one(names.SpanPodSandbox), s.one(names.SpanContainerInit)
		want := pauseAt
		if late {
			want = in.Start
		}
		if !sb.End.Equal(want) || sb.End.After(in.Start) {
			t.Errorf("pause exec late=%v: the sandbox ends at %s, want %s (the pause exec at %s, the init container starts at %s)",
				late, sb.End.Format("15:04:05.000"), want.Format("15:04:05.000"), pauseAt.Format("15:04:05.000"), in.Start.Format("15:04:05.000"))
		}
		// The start-up's breakdown (its long pole, the phase histogram)
		// measures the sandbox as the span shows it.
		if got, span := s.o.phases[names.PhaseSandbox], sb.End.Sub(sb.Start); got != span {
			t.Errorf("pause exec late=%v: the sandbox phase measured %s, its span %s", late, got, span)
		}
	}
}
