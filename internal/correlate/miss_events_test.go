package correlate_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// endDeleted ends the sim's started pod through the API: deleted, its app
// stopped, its root out.
func (s *sim) endDeleted(app uint32) span.Span {
	s.t.Helper()
	s.deleteNow()
	s.at(time.Second)
	s.exit("app", app, 0, syscall.SIGTERM)
	s.cri(cri.EventContainerExited, "app", 0, "Completed")
	s.info.Deleted = true
	s.pod()
	s.tick(3 * time.Second)
	return s.one("pod")
}

// missEvents returns the root's podchron.correlation_miss events.
func missEvents(root span.Span) []span.SpanEvent {
	return eventsNamed(root, names.EventCorrelationMiss)
}

// eventsNamed returns a span's events of a name.
func eventsNamed(sp span.Span, name string) []span.SpanEvent {
	var out []span.SpanEvent
	for _, ev := range sp.Events {
		if ev.Name == name {
			out = append(out, ev)
		}
	}
	return out
}

// Signals into a live pod's cgroup that no container of it holds (its pod
// level) are counted and told on its root, folded: one event for the
// reason with their count, however many.
func TestUnattributedSignalsFoldOnTheRoot(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	for range 5 {
		s.at(10 * time.Millisecond)
		s.kernel(&kernel.SignalEvent{Header: kernel.Header{Type: kernel.EventSignalGenerate, Origin: kernel.OriginTarget, TGID: 77, Comm: "kill"},
			Signal: syscall.SIGUSR1, Code: kernel.SIUser, TargetTGID: 4343, TargetPID: 4343, TargetCgroupID: 8000})
	}
	root := s.endDeleted(app)
	if n := s.c.Stats().Misses["signal_unknown_container"]; n != 5 {
		t.Errorf("signal_unknown_container %d, want 5", n)
	}
	evs := missEvents(root)
	if len(evs) != 1 || evs[0].Attr(names.MissReasonKey) != "signal_unknown_container" || evs[0].Attr(names.MissCount) != int64(5) {
		t.Errorf("root's miss events %+v, want one: signal_unknown_container, 5", evs)
	}
}
