package correlate_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
)

// restartAttempts: 30 days of a crash-looping container at the kubelet's
// 5-minute back-off cap.
const restartAttempts = 30 * 24 * 12

// crashLoop drives n attempts of the app container through the model as the
// node shows them: the attempt's cgroup, the runtime's create and start,
// its init's exec, a failing readiness probe, the init's exit, the
// runtime's exit, the cgroup's removal, the kubelet's BackOff event (one
// object, its count rising), the pod's status, the runtime's removal of the
// attempt before, and the 5-minute back-off.
func crashLoop(s *sim, n int) { crashLoopRemoving(s, n, true) }

// crashLoopRemoving: crashLoop, with or without the runtime's removals (a
// tracer that missed them, a kubelet keeping dead containers).
func crashLoopRemoving(s *sim, n int, remove bool) {
	s.info.InitContainers = nil
	s.sandboxUp()
	var prev string
	for a := 1; a <= n; a++ {
		id := fmt.Sprintf("c0ffee%06d", a)
		app := s.container("app", id, uint32(a))
		s.at(time.Second)
		pr := s.exec("app", 99, "cat", "/tmp/ready")
		s.at(5 * time.Millisecond)
		s.exit("app", pr, 1, 0)
		s.at(10 * time.Second)
		s.exit("app", app, 1, 0)
		s.cri(cri.EventContainerExited, "app", 1, "Error")
		s.rmdir(s.cg["app"], "/kubepods/burstable/pod"+s.uid+"/"+id)
		s.in(fact.Input{Event: &fact.K8sEvent{UID: "ev-backoff", PodUID: s.uid, Reason: "BackOff", Container: "app",
			Message: "Back-off restarting failed container app", FirstTime: s.info.CreatedAt, LastTime: s.now, Count: int32(a)}})
		s.info.Statuses = []fact.ContainerStatus{{Name: "app", RestartCount: int32(a),
			State: fact.ContainerState{Waiting: &fact.Waiting{Reason: "CrashLoopBackOff"}}}}
		s.pod()
		if prev != "" && remove {
			s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerRemoved, At: s.now,
				Container: &cri.Container{ID: prev, SandboxID: "sb1", Name: "app", PodUID: s.uid}}})
		}
		prev = id
		s.tick(5 * time.Minute)
	}
}

// BenchmarkCrashLoop30Days: one container restarted every 5 minutes for 30
// days (8,640 attempts); target: at most 256 KiB of heap kept for the pod,
// reported as heap-bytes/pod.
func BenchmarkCrashLoop30Days(b *testing.B) {
	for b.Loop() {
		before := heapNow()
		s := newSim(&testing.T{})
		crashLoop(s, restartAttempts)
		s.spans, s.o.calls = nil, nil // what was exported is gone from the tracer
		after := heapNow()
		b.ReportMetric(float64(int64(after)-int64(before)), "heap-bytes/pod")
		runtime.KeepAlive(s)
	}
}

// A container restarted every 5 minutes for 30 days: every attempt still
// gets its run and its back-off, and what the model keeps of the pod stays
// within 256 KiB (14 MiB before finished attempts were retired: every
// attempt's container, processes, session counts and span keys were kept
// until the pod ended). Retained heap after a collection, far from the
// bound either way, so the figure is stable enough to assert.
func TestCrashLoop30DaysStaysBounded(t *testing.T) {
	before := heapNow()
	s := newSim(t)
	crashLoop(s, restartAttempts)
	runs, backoffs := len(s.find(names.SpanContainerRun)), len(s.find(names.SpanContainerBackoff))
	if runs != restartAttempts || backoffs != restartAttempts-1 {
		t.Errorf("%d runs and %d back-offs, want %d and %d", runs, backoffs, restartAttempts, restartAttempts-1)
	}
	s.spans, s.o.calls = nil, nil // what was exported is gone from the tracer
	after := heapNow()
	if kept := int64(after) - int64(before); kept > 256<<10 {
		t.Errorf("%d bytes kept for the pod after %d attempts, want at most 256 KiB", kept, restartAttempts)
	}
	runtime.KeepAlive(s)
}

// Without the runtime's removals, the pod keeps its latest finished
// attempts (maxKeptAttempts) and no more.
func TestCrashLoopWithoutRemovalsStaysBounded(t *testing.T) {
	before := heapNow()
	s := newSim(t)
	crashLoopRemoving(s, restartAttempts, false)
	if runs := len(s.find(names.SpanContainerRun)); runs != restartAttempts {
		t.Errorf("%d runs, want %d", runs, restartAttempts)
	}
	s.spans, s.o.calls = nil, nil
	if kept := int64(heapNow()) - int64(before); kept > 256<<10 {
		t.Errorf("%d bytes kept for the pod after %d attempts, want at most 256 KiB", kept, restartAttempts)
	}
	runtime.KeepAlive(s)
}

// The runtime's late removal of an attempt the model retired makes nothing
// anew: no second run span, counted as a miss.
func TestRetiredAttemptStaysRetired(t *testing.T) {
	s := newSim(t)
	crashLoop(s, 10)
	n := len(s.spans)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerRemoved, At: s.now,
		Container: &cri.Container{ID: "c0ffee000001", SandboxID: "sb1", Name: "app", PodUID: s.uid, StartedAt: s.now.Add(-time.Hour)}}})
	s.tick(5 * time.Second)
	if len(s.spans) != n {
		t.Errorf("a retired attempt's removal made %d spans:\n%s", len(s.spans)-n, render(s.spans[n:]))
	}
	if got := s.c.Stats().Misses["fact_after_attempt_retired"]; got != 1 {
		t.Errorf("misses %v", s.c.Stats().Misses)
	}
}
