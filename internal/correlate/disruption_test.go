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

// A drain (the Eviction API) or a preemption: the API sets DisruptionTarget,
// then deletes the pod. The termination says why, and so do the runs.
func TestDisruptionReasonOnTerminationAndCause(t *testing.T) {
	for _, tc := range []struct {
		reason, cause string
		ignoreTERM    bool
		wantErr       bool
	}{
		{"EvictionByEvictionAPI", "evicted", false, false},
		{"PreemptionByScheduler", "preempted", true, true},
		{"DeletionByTaintManager", "evicted", false, false},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			s := newSim(t)
			app := s.startup()
			s.at(time.Second)
			s.info.Conditions = append(s.info.Conditions, fact.Condition{Type: "DisruptionTarget", Status: "True",
				Reason: tc.reason, Message: "disrupted for the test", LastTransitionTime: s.now})
			s.pod()
			s.deleteNow()
			s.at(10 * time.Millisecond)
			if tc.ignoreTERM {
				s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalIgnored, kernel.DispositionIgnored)
				s.at(3 * time.Second)
				s.signal("app", app, syscall.SIGKILL, "runc", kernel.SignalDelivered, kernel.DispositionDefault)
				s.exit("app", app, 0, syscall.SIGKILL)
				s.cri(cri.EventContainerExited, "app", 137, "Error")
			} else {
				s.gracefulStop("app", app, 20*time.Millisecond)
			}
			s.info.Deleted = true
			s.pod()
			s.tick(3 * time.Second)
			run := s.one(names.SpanContainerRun)
			if run.Attr(names.ExitCause) != tc.cause || run.Attr(names.DisruptionReason) != tc.reason ||
				(run.Status == span.StatusError) != tc.wantErr {
				t.Errorf("run: %s %v", run.Status, run.Attrs)
			}
			if term := s.one(names.SpanPodTermination); term.Attr(names.TerminationReason) != tc.reason {
				t.Errorf("termination: %v", term.Attrs)
			}
		})
	}
}
