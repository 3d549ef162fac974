package correlate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// setReady sets the pod's Ready condition (and the app's readiness) as
// the API server says it now.
func (s *sim) setReady(ready bool) {
	status := "False"
	if ready {
		status = "True"
	}
	for i := range s.info.Conditions {
		if s.info.Conditions[i].Type == "Ready" || s.info.Conditions[i].Type == "ContainersReady" {
			s.info.Conditions[i].Status, s.info.Conditions[i].LastTransitionTime = status, s.now
		}
	}
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", Ready: ready, State: fact.ContainerState{Running: &fact.Running{StartedAt: s.info.CreatedAt}}}}
	s.pod()
}

// readinessBlip: a minute after start-up the app's readiness file goes;
// the probe fails every 10 s, the kubelet's Unhealthy event (one object,
// its count and LastTime rising, as in the real cluster), Ready False
// (whole seconds: before the failing probe the kernel saw); 30 s later
// the file is back and the pod Ready again.
func readinessBlip(s *sim) time.Time {
	s.at(time.Minute)
	lost := s.now.Truncate(time.Second)
	first := s.now
	for i := range 4 {
		s.at(10 * time.Second)
		pr := s.exec("app", 99, "cat", "/tmp/ready")
		s.at(5 * time.Millisecond)
		s.exit("app", pr, 1, 0)
		s.in(fact.Input{Event: &fact.K8sEvent{UID: "ev-unhealthy", PodUID: s.uid, Reason: "Unhealthy", Container: "app",
			Message: "Readiness probe failed: cat: can't open '/tmp/ready': No such file or directory", FirstTime: first, LastTime: s.now, Count: int32(i + 1)}})
		if i == 0 {
			now := s.now
			s.now = lost
			s.setReady(false)
			s.now = now
			s.tick(2 * time.Second)
		}
	}
	s.at(30 * time.Second)
	s.setReady(true)
	s.tick(2 * time.Second)
	return lost
}

// Readiness lost and regained after the start-up: one pod.not_ready span
// under the root, from the loss to the regain, with what the probe said,
// emitted when readiness came back (not when the container or pod ends).
func TestReadinessLostAndRegained(t *testing.T) {
	s := newSim(t)
	s.startup()
	lost := readinessBlip(s)
	nr := s.one(names.SpanPodNotReady)
	if want := s.now.Add(-2 * time.Second).Sub(lost); !nr.Start.Equal(lost) || nr.Duration() != want {
		t.Errorf("not ready %s for %s, want from %s for %s", nr.Start, nr.Duration(), lost, want)
	}
	if nr.Status != span.StatusError || !strings.Contains(nr.StatusMessage, "can't open '/tmp/ready'") {
		t.Errorf("status %v %q", nr.Status, nr.StatusMessage)
	}
	if nr.Attr(names.ReadinessNotReady) != "app" || nr.Attr(names.ProcessExitCode) != int64(1) {
		t.Errorf("attrs %v", nr.Attrs)
	}
	if args, _ := nr.Attr(names.ProcessCommandArgs).([]string); strings.Join(args, " ") != "cat /tmp/ready" {
		t.Errorf("probe command %v", nr.Attrs)
	}
	if want := "not ready shop ReplicaSet " + nr.Duration().String(); !slices.Contains(s.o.calls, want) {
		t.Errorf("observer calls %v, want %q", s.o.calls, want)
	}
	if n := len(s.find(names.SpanPodStartup)); n != 1 {
		t.Errorf("%d start-ups", n)
	}
}

// Lost and not regained before the pod's deletion: the episode ends at
// the termination, said so; the termination's own NotReady is no episode.
func TestReadinessLostUntilTheEnd(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.at(time.Minute)
	s.event("Unhealthy", "app", "Readiness probe failed: HTTP probe failed with statuscode: 503")
	lost := s.now
	s.setReady(false)
	s.at(time.Minute)
	del := s.now.Add(3 * time.Second)
	s.info.DeletionTimestamp = &del
	s.pod()
	s.gracefulStop("app", app, time.Second)
	s.info.Deleted = true
	s.pod()
	s.tick(10 * time.Second)
	nr := s.one(names.SpanPodNotReady)
	if !nr.Start.Equal(lost) || nr.End.After(s.one(names.SpanPodTermination).Start) ||
		!strings.Contains(nr.StatusMessage, "until the pod's end: HTTP probe failed with statuscode: 503") {
		t.Errorf("not ready %s..%s %q", nr.Start, nr.End, nr.StatusMessage)
	}
	if want := "not ready shop ReplicaSet " + nr.Duration().String(); !slices.Contains(s.o.calls, want) {
		t.Errorf("observer calls %v, want %q", s.o.calls, want)
	}
}

// A tracer stopped (Flush) during an episode emits it unfinished, but its
// cut length is no episode's: not measured.
func TestReadinessEpisodeCutByTracerStop(t *testing.T) {
	s := newSim(t)
	s.startup()
	s.at(time.Minute)
	s.setReady(false)
	s.at(time.Minute)
	s.c.Flush()
	s.one(names.SpanPodNotReady)
	for _, c := range s.o.calls {
		if strings.HasPrefix(c, "not ready ") {
			t.Errorf("observed %q for an episode the tracer's stop cut", c)
		}
	}
}
