package correlate_test

import (
	"fmt"
	"maps"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// A trace ends once: after a pod's root span is out, no later fact about
// it (its API deletion, a relist, the runtime's sandbox removal, a CNI
// DEL, a late Event, a cgroup of its) reopens it, however late. The
// facts are counted as misses by their source (api_after_trace_end, ...)
// and dropped.

// lateGap is far past any short retention of a finished pod's state (the
// model kept finished pods for 5 minutes): a Job's pod kept by its history
// limit or TTL, an Evicted pod, is deleted hours later.
const lateGap = 3 * time.Hour

// completedJob: a Job's pod that runs and exits with code, ending on the
// node (its pod cgroup removed) while the API keeps the object, terminal.
func completedJob(t *testing.T, code int) *sim {
	s := newSim(t)
	s.info.InitContainers = nil
	s.info.OwnerKind = "Job"
	s.info.RestartPolicy = "Never"
	s.info.Containers[0].Readiness = nil
	s.info.Containers[0].PostStart = nil
	s.info.Containers[0].PreStop = nil
	s.sandboxUp()
	app := s.container("app", "c0ffee02", 0)
	s.at(2 * time.Second)
	s.exit("app", app, code, 0)
	reason, phase := "Completed", "Succeeded"
	if code != 0 {
		reason, phase = "Error", "Failed"
	}
	s.cri(cri.EventContainerExited, "app", int32(code), reason)
	s.at(300 * time.Millisecond)
	s.info.Phase = phase
	s.pod()
	s.at(time.Second)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxStopped, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid}}})
	s.rmdir(s.cg["app"], "/kubepods/burstable/pod"+s.uid+"/c0ffee02")
	s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.tick(3 * time.Second)
	s.one("pod")
	return s
}

// cniDel: the runtime's CNI DEL for the pod's sandbox.
func (s *sim) cniDel() {
	s.pid++
	cni := s.pid
	s.kernel(&kernel.ExecEvent{Header: kernel.Header{Type: kernel.EventExec, Origin: kernel.OriginCNI, TGID: cni, PID: cni, Comm: "bridge"}, Filename: "/opt/cni/bin/bridge",
		CNI: &kernel.CNIRun{Command: "DEL", ContainerID: "sb1", IfName: "eth0", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop"}})
	s.at(20 * time.Millisecond)
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginCNI, TGID: cni, PID: cni}})
}

// lateDeletion: the API deletes the terminal pod (a Job's TTL, its
// history limit, the pod GC of an Evicted pod) long after it ended.
func (s *sim) lateDeletion() {
	s.at(lateGap)
	s.in(fact.Input{Tick: true})
	grace := int64(0)
	del := s.now
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	s.at(50 * time.Millisecond)
	s.info.Deleted = true
	s.pod()
	s.tick(5 * time.Second)
}

// checkEndedOnce fails unless the spans since before are none, and the late
// facts were counted.
func checkEndedOnce(t *testing.T, s *sim, before int, counted ...names.Miss) {
	t.Helper()
	if late := s.spans[before:]; len(late) > 0 {
		t.Errorf("%d spans after the trace ended (a second trace):\n%s", len(late), render(late))
	}
	for _, m := range counted {
		if n := s.c.Stats().Misses[string(m)]; n == 0 {
			t.Errorf("late facts of an ended pod not counted (%s): %v", m, s.c.Stats().Misses)
		}
	}
	for _, name := range []string{"pod", names.SpanPodScheduling} {
		if got := len(s.find(name)); got != 1 {
			t.Errorf("%d %s spans, want 1", got, name)
		}
	}
}

// A Job's pod that succeeded, deleted hours later: no second root, no
// second pod.scheduling, no pod.startup ERROR "gone before Ready", no
// forced pod.termination.
func TestEndedSucceededDeletedLate(t *testing.T) {
	s := completedJob(t, 0)
	before := len(s.spans)
	s.lateDeletion()
	checkEndedOnce(t, s, before, names.MissAPIAfterTraceEnd)
}

// The same for a pod that failed (exit 1, restartPolicy Never), and the
// runtime's late removal of its sandbox and the CNI DEL that comes with it.
func TestEndedFailedDeletedLateWithSandboxRemoval(t *testing.T) {
	s := completedJob(t, 1)
	before := len(s.spans)
	s.lateDeletion()
	s.at(time.Minute)
	s.cniDel()
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxRemoved, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid}}})
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerRemoved, At: s.now,
		Container: &cri.Container{ID: "c0ffee02", SandboxID: "sb1", Name: "app", PodUID: s.uid}}})
	s.tick(5 * time.Second)
	checkEndedOnce(t, s, before, names.MissAPIAfterTraceEnd, names.MissCNIAfterTraceEnd, names.MissRuntimeAfterTraceEnd)
}

// A pod deleted through the API (its trace ends with the deletion), whose
// sandbox the runtime removes much later: the late removal, its CNI DEL, a
// relist of the informer (the object as last seen), a late Event and a
// cgroup the kernel reports from it do not reopen it.
func TestEndedDeletedPodLateRuntimeFacts(t *testing.T) {
	s := newSim(t)
	s.endDeleted(s.startup())
	before := len(s.spans)
	s.at(lateGap)
	s.in(fact.Input{Tick: true})
	s.cniDel()
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxRemoved, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid}}})
	s.event("Killing", "app", "Stopping container app")
	s.mkdir(8100, "/kubepods/burstable/pod"+s.uid+"/c0ffee09")
	s.tick(5 * time.Second)
	checkEndedOnce(t, s, before, names.MissCNIAfterTraceEnd, names.MissRuntimeAfterTraceEnd,
		names.MissEventAfterTraceEnd, names.MissCgroupAfterTraceEnd)
}

// A CNI run after the pod's trace ended is one miss, cni_after_trace_end,
// however late it comes: while the finished pod is kept (for 5 minutes)
// and hours later, when only its tombstone is; it is not counted again as
// something else, at its start or its exit.
func TestLateCNIRunIsOneMiss(t *testing.T) {
	for _, after := range []time.Duration{time.Minute, lateGap} {
		s := completedJob(t, 0)
		s.at(after)
		s.in(fact.Input{Tick: true})
		before := maps.Clone(s.c.Stats().Misses)
		s.cniDel()
		s.tick(time.Second)
		got := s.c.Stats().Misses
		if n := got["cni_after_trace_end"] - before["cni_after_trace_end"]; n != 1 {
			t.Errorf("a CNI DEL %s after the end: cni_after_trace_end +%d, want +1 (misses before %v, after %v)", after, n, before, got)
		}
		var total uint64
		for reason, n := range got {
			total += n - before[reason]
		}
		if total != 1 {
			t.Errorf("a CNI DEL %s after the end: %d misses, want 1 (misses before %v, after %v)", after, total, before, got)
		}
	}
}

// A relist (the informer's, after an API server restart) hours later still
// lists the terminal pod, not deleted: no new trace either.
func TestEndedRelistLate(t *testing.T) {
	s := completedJob(t, 0)
	before := len(s.spans)
	s.at(lateGap)
	s.in(fact.Input{Tick: true})
	s.pod()
	s.tick(10 * time.Minute)
	checkEndedOnce(t, s, before, names.MissAPIAfterTraceEnd)
}

// The tombstones are bounded: past 65,536 ended pods the oldest is
// evicted, and that is counted (ended_pod_evicted); the others still keep
// their late facts out.
func TestEndedTombstonesBounded(t *testing.T) {
	s := newSim(t)
	const n = 65536 + 1
	uid := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
	for i := range n {
		// all at one instant: no timer runs over the 65,536 pods kept whole (goneRetention)
		s.mkdir(uint64(100000+i), "/kubepods/burstable/pod"+uid(i))
		s.rmdir(uint64(100000+i), "/kubepods/burstable/pod"+uid(i))
	}
	st := s.c.Stats()
	if st.Misses["ended_pod_evicted"] != 1 || st.EndedPods != 65536 {
		t.Fatalf("after %d ended pods: %d evicted, %d kept, want 1 and 65536", n, st.Misses["ended_pod_evicted"], st.EndedPods)
	}
	s.at(lateGap)
	s.in(fact.Input{Tick: true})
	s.mkdir(99, "/kubepods/burstable/pod"+uid(1))
	if got := s.c.Stats().Misses["cgroup_after_trace_end"]; got != 1 {
		t.Errorf("a late cgroup of a kept tombstone: cgroup_after_trace_end %d, want 1", got)
	}
}

// A Job's pod done before it was ever Ready (a readiness probe that never
// passed) whose sandbox and cgroups go before a tick decided its start-up:
// the start-up completed, as the API's Succeeded phase says when it came
// first, and as the facts say when it did not (restartPolicy Never, every
// app container exited 0): not "gone before Ready" (e2e 10c under load,
// 2026-11-28: the phase and the sandbox's removal one input apart).
//
// With restartPolicy OnFailure, a first run that failed and was restarted
// does not hold the completion: the last run is what counts.
func TestJobDoneBeforeReadyEndsBeforeATick(t *testing.T) {
	for _, tc := range []struct {
		policy    string
		phaseSeen bool
	}{{"Never", true}, {"Never", false}, {"OnFailure", false}} {
		phaseSeen := tc.phaseSeen
		t.Run(fmt.Sprintf("%s phase seen %v", tc.policy, phaseSeen), func(t *testing.T) {
			s := newSim(t)
			s.info.InitContainers = nil
			s.info.OwnerKind, s.info.RestartPolicy = "Job", tc.policy
			s.info.Containers[0].PostStart, s.info.Containers[0].PreStop = nil, nil
			s.sandboxUp()
			attempt := uint32(0)
			if tc.policy == "OnFailure" {
				first := s.container("app", "c0ffee01", 0)
				s.at(time.Second)
				s.exit("app", first, 1, 0)
				s.cri(cri.EventContainerExited, "app", 1, "Error")
				s.at(time.Second)
				attempt = 1
			}
			app := s.container("app", "c0ffee02", attempt)
			s.at(time.Second)
			s.exit("app", app, 0, 0)
			s.cri(cri.EventContainerExited, "app", 0, "Completed")
			s.at(10 * time.Millisecond)
			if phaseSeen {
				s.info.Phase = "Succeeded"
				s.pod()
			}
			s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxStopped, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid}}})
			s.rmdir(s.cg["app"], "/kubepods/burstable/pod"+s.uid+"/c0ffee02")
			s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
			// Without its phase the pod's end waits (bounded) for it.
			s.tick(3*time.Second + 15*time.Second)
			st := s.one(names.SpanPodStartup)
			if st.Status == span.StatusError || st.Attr(names.StartupOutcome) != "completed" {
				t.Errorf("start-up %s %q outcome %v, want completed\n%s", st.Status, st.StatusMessage, st.Attr(names.StartupOutcome), render(s.spans))
			}
		})
	}
}

// A signal into a pod's cgroup that no known container holds is not lost
// silently: counted as coming after its pod's trace ended, or as into a
// cgroup the model never saw. A signal to a tracked process outside the
// pods (the runtime's) is not a pod's step and counts nothing.
func TestSignalNoContainerHoldsIsCounted(t *testing.T) {
	s := completedJob(t, 0)
	before := len(s.spans)
	s.at(100 * time.Millisecond)
	s.signal("app", 4242, syscall.SIGTERM, "kubelet", kernel.SignalDelivered, kernel.DispositionDefault)
	s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget, TGID: 77, Comm: "kill"},
		Signal: syscall.SIGUSR1, Code: kernel.SIUser, TargetTGID: 4343, TargetPID: 4343, TargetCgroupID: 123456})
	s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginRuntime, TGID: 77, Comm: "kill"},
		Signal: syscall.SIGTERM, Code: kernel.SIUser, TargetTGID: 4444, TargetPID: 4444, TargetCgroupID: 654321})
	s.tick(time.Second)
	m := s.c.Stats().Misses
	if m["signal_after_trace_end"] != 1 || m["signal_unknown_cgroup"] != 1 || m["signal_unknown_container"] != 0 {
		t.Errorf("misses %v: want signal_after_trace_end 1, signal_unknown_cgroup 1", m)
	}
	if late := s.spans[before:]; len(late) > 0 {
		t.Errorf("%d spans after the trace ended:\n%s", len(late), render(late))
	}
}

// A root's exit in a pod's cgroup that the model holds no process for is
// not lost silently: after the pod's trace ended (its processes are dropped
// then), or in a cgroup the model never saw. A runtime's process exiting
// counts nothing, nor does an unknown one in a live container's cgroup (the
// runtime's set-up clones, which never exec).
func TestExitNoProcessHoldsIsCounted(t *testing.T) {
	s := completedJob(t, 0)
	before := len(s.spans)
	s.at(100 * time.Millisecond)
	s.exit("app", 4242, 0, syscall.SIGKILL)
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginWatched, CgroupID: 123456, TGID: 4343, PID: 4343}})
	s.kernel(&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Origin: kernel.OriginRuntime, CgroupID: 654321, TGID: 4444, PID: 4444}})
	s.tick(time.Second)
	m := s.c.Stats().Misses
	if m["exit_after_trace_end"] != 1 || m["exit_unknown_cgroup"] != 1 || len(m) != 2 {
		t.Errorf("misses %v: want exit_after_trace_end 1, exit_unknown_cgroup 1, nothing else", m)
	}
	if late := s.spans[before:]; len(late) > 0 {
		t.Errorf("%d spans after the trace ended:\n%s", len(late), render(late))
	}

	live := newSim(t)
	live.sandboxUp()
	live.container("app", "c0ffee02", 0)
	live.at(time.Second)
	live.exit("app", 5151, 0, 0) // runc:[1:CHILD]
	live.tick(time.Second)
	if m := live.c.Stats().Misses; len(m) != 0 {
		t.Errorf("misses %v: want none for a set-up clone's exit", m)
	}
}
