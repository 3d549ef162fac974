package correlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

const lbGate = "example.com/lb-ready"

// gatedPod: a pod whose one container runs and is ready; its readiness
// gate's condition is set by nobody yet.
func gatedPod(s *sim) {
	s.info.InitContainers = nil
	s.info.ReadinessGates = []string{lbGate}
	s.sandboxUp()
	s.container("app", "c0ffee02", 0)
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", Ready: true, State: fact.ContainerState{Running: &fact.Running{StartedAt: s.now}}}}
	s.at(time.Second)
	s.cond("ContainersReady")
}

// A pod held by a readiness gate nobody sets: the start-up that gives up
// names the gate, not a container.
func TestStartupHeldByReadinessGateNamesIt(t *testing.T) {
	s := newSim(t)
	withStartupTimeout(s, time.Minute)
	gatedPod(s)
	s.tick(2 * time.Minute)
	st := s.one(names.SpanPodStartup)
	if st.Status != span.StatusError || !strings.Contains(st.StatusMessage, "readiness gate "+lbGate+" not True") ||
		st.Attr(names.WaitingReason) != "ReadinessGates" {
		t.Errorf("start-up: %v %q %v", st.Status, st.StatusMessage, st.Attrs)
	}
}

// The gate's condition set True later: the start-up is OK and says the
// gate held it after the containers were ready, and for how long.
func TestStartupWaitedForReadinessGate(t *testing.T) {
	s := newSim(t)
	gatedPod(s)
	s.at(8 * time.Second)
	s.cond(lbGate)
	s.cond("Ready")
	s.tick(3 * time.Second)
	st := s.one(names.SpanPodStartup)
	if st.Status != span.StatusOK || len(st.Events) != 1 || st.Events[0].Name != names.EventReadinessGatesWaited {
		t.Fatalf("start-up: %v %q %v", st.Status, st.StatusMessage, st.Events)
	}
	ev := st.Events[0]
	var msg string
	var wait float64
	for _, a := range ev.Attrs {
		switch a.Key {
		case names.Message:
			msg, _ = a.Value.(string)
		case names.ReadinessGatesWaitSeconds:
			wait, _ = a.Value.(float64)
		}
	}
	if !strings.Contains(msg, lbGate) || wait != 8 {
		t.Errorf("gate event: %v", ev.Attrs)
	}
}
