package correlate_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// Restarts the recorded streams cannot show (they have no API server): a
// tracer restarted while the API server says a pod is going, driven with
// the synthetic builders and seeded as restart_test.go seeds the second
// instance (restartSeed: the scan, the runtime's first poll, the API
// server's lists and its watch's state).

// midTermination: a pod deleted with a 30 s grace period; the kubelet runs
// its preStop exec hook (1 s), then the runtime's SIGTERM, which the app
// takes 400 ms to handle; then the object is gone. It returns the stream
// and the app's init PID.
func midTermination(t *testing.T) (inputs []fact.Input, app uint32) {
	inputs = captureScenario(t, func(t *testing.T) {
		s := newSim(t)
		app = s.startup()
		s.tick(time.Minute)
		s.deleteWith(30)
		s.tick(200 * time.Millisecond)
		hook := s.exec("app", 99, "sleep", "1")
		s.tick(time.Second)
		s.exit("app", hook, 0, 0)
		s.tick(100 * time.Millisecond)
		s.signal("app", app, syscall.SIGTERM, "runc", kernel.SignalDelivered, kernel.DispositionHandler)
		s.tick(400 * time.Millisecond)
		s.exit("app", app, 0, 0)
		s.tick(50 * time.Millisecond)
		s.cri(cri.EventContainerExited, "app", 0, "Completed")
		s.tick(300 * time.Millisecond)
		s.gone()
		s.tick(3 * time.Second)
		s.one(names.SpanPodTermination)
	})
	return inputs, app
}

// inputIndex is the index of the first input that matches, after from.
func inputIndex(t *testing.T, inputs []fact.Input, from int, match func(fact.Input) bool) int {
	t.Helper()
	for i := from; i < len(inputs); i++ {
		if match(inputs[i]) {
			return i
		}
	}
	t.Fatal("no such input in the stream")
	return 0
}

// placed: how a span sits in its trace (its ID, name and parent).
func placed(s span.Span) string {
	return fmt.Sprintf("%s %s parent=%s", s.SpanID, s.Name, s.Parent)
}

// A tracer restarted while a pod terminates (its deletionTimestamp set, the
// runtime still running its container): the API server's list gives the
// second instance the deletion, and the runtime's first poll the container
// still running. Wherever the cut falls between the deletion and the
// container's exit, the second instance emits the pod.termination and the
// container.stop with the span IDs and parents of the uninterrupted run,
// and no span ID goes out twice with different content.
func TestRestartMidTermination(t *testing.T) {
	inputs, app := midTermination(t)
	want := map[string]span.Span{}
	for _, s := range replay(inputs) {
		want[s.Name] = s // the scenario has one of each below
	}
	deletion := inputIndex(t, inputs, 0, func(x fact.Input) bool { return x.Pod != nil && x.Pod.DeletionTimestamp != nil })
	exit := inputIndex(t, inputs, deletion, func(x fact.Input) bool {
		e, ok := x.Kernel.(*kernel.ExitEvent)
		return ok && e.TGID == app
	})
	t.Logf("cuts %d..%d of %d inputs", deletion+1, exit, len(inputs))
	for i := deletion + 1; i <= exit; i++ {
		a, b := restartRuns(inputs, i)
		if c := conflicts(append(a, b...)); len(c) > 0 {
			t.Errorf("cut before input %d (%s): span IDs emitted twice with different content:\n%s", i, describe(inputs[i]), strings.Join(c, "\n"))
		}
		for _, name := range []string{names.SpanPodTermination, names.SpanContainerStop, "pod"} {
			w := want[name]
			got := ""
			for _, s := range b {
				if s.SpanID == w.SpanID {
					got = placed(s)
					if name == names.SpanPodTermination && !s.Start.Equal(w.Start) {
						// The API server's deletion, in the second's list.
						t.Errorf("cut before input %d: the termination starts at %s, uninterrupted %s", i, s.Start, w.Start)
					}
				}
			}
			if got != placed(w) {
				t.Errorf("cut before input %d (%s): %s from the second instance: %q, uninterrupted %q",
					i, describe(inputs[i]), name, got, placed(w))
			}
		}
	}
}

// conflicts lists the span IDs emitted twice with different content.
func conflicts(spans []span.Span) []string {
	seen := map[span.SpanID]span.Span{}
	var out []string
	for _, s := range spans {
		if prev, ok := seen[s.SpanID]; ok && content(prev) != content(s) {
			out = append(out, fmt.Sprintf("%s %s:\n  %s\n  %s", s.SpanID, s.Name, content(prev), content(s)))
		}
		seen[s.SpanID] = s
	}
	return out
}

// attr is a span's string attribute.
func attr(s span.Span, key string) string {
	for _, a := range s.Attrs {
		if a.Key == key {
			if str, ok := a.Value.(string); ok {
				return str
			}
		}
	}
	return ""
}
