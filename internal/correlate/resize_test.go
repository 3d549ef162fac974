package correlate_test

import (
	"testing"
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// An in-place resize (GA in 1.35) without a restart: the kubelet first
// defers it (PodResizePending, Deferred), then actuates it
// (PodResizeInProgress) and removes the condition once done. The pod's
// root span carries each step as an event, the last with its duration;
// nothing else of the trace changes.
func TestResizeEventsOnRoot(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	s.tick(time.Minute)
	s.setCond("PodResizePending", "True", s.now)
	s.info.Conditions[len(s.info.Conditions)-1].Reason = "Deferred"
	s.info.Conditions[len(s.info.Conditions)-1].Message = "Node didn't have enough capacity: memory, requested: 300Mi"
	s.pod()
	s.tick(5 * time.Second)
	s.info.Conditions = s.info.Conditions[:len(s.info.Conditions)-1]
	s.setCond("PodResizeInProgress", "True", s.now)
	s.pod()
	began := s.now
	s.tick(1500 * time.Millisecond)
	s.info.Conditions = s.info.Conditions[:len(s.info.Conditions)-1]
	s.pod()
	s.tick(time.Second)
	s.deleteWith(30)
	s.gracefulStop("app", app, 100*time.Millisecond)
	s.gone()
	s.tick(3 * time.Second)
	root := s.one("pod")
	got := map[string]span.SpanEvent{}
	for _, ev := range root.Events {
		got[ev.Name] = ev
	}
	if ev, ok := got[names.EventResizePending]; !ok || ev.Attr(names.K8sEventReason) != "Deferred" {
		t.Errorf("no %s event with the reason Deferred: %v", names.EventResizePending, root.Events)
	}
	if ev, ok := got[names.EventResizeInProgress]; !ok || !ev.Time.Equal(began) {
		t.Errorf("no %s event at %s: %v", names.EventResizeInProgress, began, root.Events)
	}
	if ev, ok := got[names.EventResizeDone]; !ok || ev.Attr(names.ResizeSeconds) != 1.5 {
		t.Errorf("no %s event after 1.5 s: %v", names.EventResizeDone, root.Events)
	}
	if run := s.runOf("c0ffee02"); run.Attr(names.ExitCause) != string(names.CauseCompleted) {
		t.Errorf("a resize without restart changed the run: %v", run.Attrs)
	}
}
