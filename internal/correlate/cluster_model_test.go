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

// Behaviours first seen on a real kubelet (test/e2e), reproduced here.

// The API server's Ready condition has whole seconds and can arrive before
// the kernel's exit of the readiness probe that made the pod ready: the
// probe still belongs to the start-up, and the start-up ends at that probe,
// not at the truncated second.
func TestReadyBeforeProbeExitIsSeen(t *testing.T) {
	s := newSim(t)
	s.pod()
	s.cond("PodScheduled")
	s.mkdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
	s.at(100 * time.Millisecond)
	s.container("app", "c0ffee02", 0)
	s.at(400 * time.Millisecond)
	probeStart := s.now
	pr := s.exec("app", 99, "cat", "/tmp/ready")
	s.at(5 * time.Millisecond)
	exitAt := s.now
	// Ready=True with the second truncated, seen (10 ms later) before the
	// probe's exit event, which trails in the ring buffer.
	s.at(10 * time.Millisecond)
	s.info.Conditions = append(s.info.Conditions, fact.Condition{Type: "Ready", Status: "True", LastTransitionTime: exitAt.Truncate(time.Second)})
	s.pod()
	if len(s.find(names.SpanPodStartup)) != 0 {
		t.Fatal("start-up emitted before the kernel's view could settle")
	}
	s.at(50 * time.Millisecond)
	s.in(fact.Input{Kernel: &kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginWatched,
		CgroupID: s.cg["app"], TGID: pr, PID: pr, Time: exitAt}}})
	// The next (passing) probe, still within the settle time: not start-up.
	s.at(time.Second)
	pr2 := s.exec("app", 99, "cat", "/tmp/ready")
	s.at(5 * time.Millisecond)
	s.exit("app", pr2, 0, 0)
	s.tick(2 * time.Second)
	st := s.one(names.SpanPodStartup)
	if !st.End.Equal(exitAt) {
		t.Errorf("start-up ends %s, want the readiness probe's exit %s", st.End, exitAt)
	}
	p := s.one("probe.readiness")
	if p.Parent != st.SpanID || !p.Start.Equal(probeStart) {
		t.Errorf("probe.readiness parent %s start %s", s.byID(p.Parent), p.Start)
	}
}

// A container that handles SIGTERM exits 0 when the kubelet restarts it for
// failed liveness probes; without the Killing event (it lags, or there is no
// API server) the kernel's failed probes and the runtime's SIGTERM tell.
func TestLivenessRestartExitZeroFromKernel(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	for range 2 {
		s.at(time.Second)
		pr := s.exec("app", 99, "true")
		s.at(5 * time.Millisecond)
		s.exit("app", pr, 1, 0)
	}
	s.at(20 * time.Millisecond)
	s.gracefulStop("app", app, 30*time.Millisecond)
	s.tick(2 * time.Second)
	run := s.one(names.SpanContainerRun)
	if got := run.Attr(names.ExitCause); got != "liveness_restart" {
		t.Fatalf("cause %v, want liveness_restart: %v", got, run.Attrs)
	}
	if run.Attr(names.SignalSenderComm) != "runc" {
		t.Errorf("sender: %v", run.Attrs)
	}
}

// kubectl delete --force: the object is gone at once while the container
// still runs; the termination lasts until it exits. What comes after the
// root (the runtime's CNI DEL again at the sandbox's removal) starts no
// second root and is not added outside the root's time: it is counted.
func TestForcedDeletionLingers(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	del := s.now
	grace := int64(0)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	s.info.Deleted = true
	s.pod()
	s.tick(time.Second)
	if len(s.find("pod")) != 0 {
		t.Fatal("pod finished while its container still runs")
	}
	s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
	s.exit("app", app, 0, syscall.SIGKILL)
	exitAt := s.now
	s.cri(cri.EventContainerExited, "app", 137, "Error")
	s.tick(2 * time.Second)
	root := s.one("pod")
	term := s.one(names.SpanPodTermination)
	if !term.End.Equal(exitAt) || term.Attr(names.TerminationForced) != true {
		t.Errorf("termination %s–%s %v, want the end at the exit %s", term.Start, term.End, term.Attrs, exitAt)
	}
	var deleted bool
	for _, e := range root.Events {
		deleted = deleted || e.Name == names.EventAPIObjectDeleted
	}
	if !deleted {
		t.Errorf("no podchron.api_object_deleted event: %v", root.Events)
	}
	// Late facts: the sandbox's removal and its CNI DEL.
	s.at(30 * time.Second)
	s.pid++
	cni := s.pid
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginCNI, TGID: cni, PID: cni, Comm: "bridge"}, Filename: "/opt/cni/bin/bridge",
		CNI: &kernel.CNIRun{Command: "DEL", ContainerID: "sb1", IfName: "eth0", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop"}})
	s.at(5 * time.Millisecond)
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginCNI, TGID: cni, PID: cni}})
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxRemoved, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid}}})
	s.tick(2 * time.Second)
	s.one("pod")
	if dels := s.find("cni.DEL bridge"); len(dels) != 0 {
		t.Errorf("a CNI DEL after the root is out was emitted: %+v", dels[0])
	}
	if n := s.c.Stats().Misses["cni_after_trace_end"]; n != 1 {
		t.Errorf("miss cni_after_trace_end = %d, want 1 (the late DEL counted)", n)
	}
}

// runc re-executes itself as "runc init" through /proc/self/exe (or a
// memfd copy): that exec is the runtime's, not the container's init.
func TestRuncInitIsNotTheContainerInit(t *testing.T) {
	for _, fn := range []string{"/proc/self/exe", "/memfd:runc_cloned:/proc/self/exe (deleted)"} {
		t.Run(fn, func(t *testing.T) {
			s := newSim(t)
			s.pod()
			s.mkdir(8000, "/kubepods/burstable/pod"+s.uid)
			s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
			s.cg["app"] = 9100
			s.ids["app"] = "c0ffee09"
			s.mkdir(9100, "/kubepods/burstable/pod"+s.uid+"/c0ffee09")
			s.pid++
			stage := s.pid
			s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: 9100, TGID: stage, PID: stage, PPID: 1},
				Filename: fn, Args: []string{"/usr/sbin/runc", "init"}})
			s.pid++
			child := s.pid
			s.kernel(&kernel.ForkEvent{Header: kernel.Header{Type: kernel.EventFork, Origin: kernel.OriginWatched, CgroupID: 9100, TGID: stage, PID: stage}, ChildTGID: child})
			s.exit("app", stage, 0, 0)
			s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginWatched, CgroupID: 9100, TGID: child, PID: child, PPID: stage},
				Filename: "/bin/sh", Args: []string{"/bin/sh", "-c", "serve"}})
			s.cri(cri.EventContainerStarted, "app", 0, "")
			s.at(time.Second)
			s.exit("app", child, 0, 0)
			s.cri(cri.EventContainerExited, "app", 0, "Completed")
			s.tick(2 * time.Second)
			runs := s.find(names.SpanContainerRun)
			if len(runs) != 1 || runs[0].Attr(names.ProcessPID) != int64(child) {
				t.Fatalf("runs: %v", runs)
			}
		})
	}
}

// A tracer restart (DaemonSet rollout) must not end live pods' traces: the
// next instance continues them under the same IDs and emits their root.
func TestShutdownLeavesLivePodsToTheNextTracer(t *testing.T) {
	s := newSim(t)
	s.startup()
	s.c.Shutdown()
	if got := s.find("pod"); len(got) != 0 {
		t.Fatalf("Shutdown emitted the live pod's root: %v", got)
	}
	s.one(names.SpanPodStartup)
	s.one(names.SpanContainerInit)
	if got := s.find(names.SpanContainerRun); len(got) != 0 {
		t.Errorf("Shutdown emitted a running container: %v", got)
	}
	s.c.Flush()
	if root := s.one("pod"); root.Status != span.StatusUnset {
		t.Errorf("Flush: root %+v", root)
	}
}

// The API server keeps whole seconds: a pod created at .900 and seen by the
// watch at once starts at .900, not at the truncated second; a deletion
// likewise.
func TestAPITimesSharpenedBySightings(t *testing.T) {
	s := newSim(t)
	s.at(900 * time.Millisecond)
	created := s.now
	s.info.CreatedAt = s.now.Truncate(time.Second)
	app := s.startup()
	if st := s.one(names.SpanPodStartup); !st.Start.Equal(created) {
		t.Errorf("start-up starts %s, want the sighting %s", st.Start, created)
	}
	s.at(1700 * time.Millisecond)
	requested := s.now
	deadline := requested.Truncate(time.Second).Add(3 * time.Second)
	grace := int64(3)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &deadline, &grace
	s.pod()
	s.at(100 * time.Millisecond)
	s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
	s.exit("app", app, 0, 0)
	s.cri(cri.EventContainerExited, "app", 0, "Completed")
	s.info.Deleted = true
	s.pod()
	if term := s.one(names.SpanPodTermination); !term.Start.Equal(requested) {
		t.Errorf("termination starts %s, want the sighting %s", term.Start, requested)
	}
}

// When a container's init exits, the kernel SIGKILLs what is left in its PID
// namespace, "sent" by the exiting init: the run's signal event says so.
func TestPIDNamespaceTeardownIsNamed(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	child := app + 1000
	s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget, TGID: app, PID: app, Comm: "sh", CgroupID: s.cg["app"]},
		Signal: syscall.SIGKILL, Code: kernel.SIKernel, Result: kernel.SignalDelivered, TargetTGID: child, TargetPID: child, TargetCgroupID: s.cg["app"]})
	s.exit("app", app, 0, 0)
	s.cri(cri.EventContainerExited, "app", 0, "Completed")
	s.tick(2 * time.Second)
	run := s.one(names.SpanContainerRun)
	for _, ev := range run.Events {
		if ev.Name == "signal SIGKILL" {
			for _, a := range ev.Attrs {
				if a.Key == "message" {
					return
				}
			}
			t.Fatalf("teardown SIGKILL not named: %v", ev.Attrs)
		}
	}
	t.Fatalf("no SIGKILL event: %v", run.Events)
}
