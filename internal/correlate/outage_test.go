package correlate_test

import (
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/fact/cri"
)

// A 2 s runtime restart marks the spans of that time degraded, and only
// them: phases after the runtime is back are whole again.
func TestDegradedClearsWhenTheSourceRecovers(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	if d := s.one(names.SpanPodStartup).Attr(names.Degraded); d != nil {
		t.Fatalf("start-up degraded before any outage: %v", d)
	}
	s.at(time.Second)
	down := s.now
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventRuntimeUnavailable, At: down, Gap: &cri.Gap{Since: down}}})
	s.at(2 * time.Second)
	up := s.now
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventRuntimeAvailable, At: up, Gap: &cri.Gap{Since: down, Until: up}}})
	// The first run overlapped the outage.
	s.at(time.Second)
	s.exit("app", app, 1, 0)
	s.cri(cri.EventContainerExited, "app", 1, "Error")
	s.tick(3 * time.Second)
	// The next attempt runs wholly after it.
	app2 := s.container("app", "c0ffee12", 1)
	s.at(time.Second)
	s.exit("app", app2, 1, 0)
	s.cri(cri.EventContainerExited, "app", 1, "Error")
	s.tick(3 * time.Second)
	runs := s.find(names.SpanContainerRun)
	if len(runs) != 2 {
		t.Fatalf("want 2 runs, got %d", len(runs))
	}
	if d, _ := runs[0].Attr(names.Degraded).(string); !strings.Contains(d, "runtime unavailable") {
		t.Errorf("the run during the outage: degraded %q", d)
	}
	if d := runs[1].Attr(names.Degraded); d != nil {
		t.Errorf("the run after the runtime came back: degraded %v", d)
	}
	if bo := s.one(names.SpanContainerBackoff); bo.Attr(names.Degraded) != nil {
		t.Errorf("back-off after recovery degraded: %v", bo.Attrs)
	}
	// The API server goes away for good: what ends afterwards is degraded.
	s.in(fact.Input{API: &fact.APIStatus{Available: false, Since: s.now, Err: "connection refused"}})
	s.at(time.Second)
	s.signal("app", app2, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
	s.tick(time.Second)
	var root span.Span
	s.c.Flush()
	for _, sp := range s.spans {
		if sp.Name == "pod" {
			root = sp
		}
	}
	if d, _ := root.Attr(names.Degraded).(string); !strings.Contains(d, "apiserver unavailable: connection refused") || !strings.Contains(d, "runtime unavailable") {
		t.Errorf("root (spans the whole life): degraded %q", d)
	}
	var gap bool
	for _, e := range root.Events {
		gap = gap || e.Name == names.EventRuntimeGap && e.Time.Equal(down)
	}
	if !gap {
		t.Errorf("no podchron.runtime_gap event at %s on the root: %+v", down, root.Events)
	}
}
