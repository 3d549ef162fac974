package correlate_test

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/correlate"
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

// terminalBeforeStart: a tracer (re)started at the sim's now, whose API
// list shows a Job's pod that ran and ended an hour before (phase, its
// container terminated with code), kept by the Job's history limit; the
// runtime still holds its exited container and stopped sandbox.
func terminalBeforeStart(t *testing.T, code int32, phase, reason string) *sim {
	s := newSim(t)
	s.in(fact.Input{Start: &fact.Start{At: s.now, NodeName: "node-a"}})
	return terminalBeforeStartOn(s, code, phase, reason)
}

// terminalBeforeStartOn: the same, on a sim already started (its scan fed).
func terminalBeforeStartOn(s *sim, code int32, phase, reason string) *sim {
	start := s.now
	s.in(fact.Input{API: &fact.APIStatus{Available: true, Since: start}})
	began, ended := start.Add(-time.Hour), start.Add(-time.Hour+30*time.Second)
	s.info.InitContainers = nil
	s.info.OwnerKind, s.info.OwnerName, s.info.RestartPolicy = "Job", "nightly-29001", "Never"
	s.info.CreatedAt, s.info.Phase = began.Add(-2*time.Second), phase
	s.info.Conditions = []fact.Condition{{Type: "PodScheduled", Status: "True", LastTransitionTime: began.Add(-2 * time.Second)},
		{Type: "Ready", Status: "False", Reason: "PodCompleted", LastTransitionTime: ended}}
	s.info.Statuses = []fact.ContainerStatus{{Name: "app", ContainerID: "c0ffee02", State: fact.ContainerState{
		Terminated: &fact.Terminated{ExitCode: code, Reason: reason, StartedAt: began, FinishedAt: ended, ContainerID: "c0ffee02"}}}}
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxStopped, Phase: cri.PhaseInitial, At: start,
		Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: began.Add(-time.Second)}}})
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerExited, Phase: cri.PhaseInitial, At: start,
		Container: &cri.Container{ID: "c0ffee02", SandboxID: "sb1", Name: "app", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop",
			State: "exited", ExitCode: code, Reason: reason, CreatedAt: began, StartedAt: began, FinishedAt: ended}}})
	s.pod()
	s.tick(time.Second)
	return s
}

// A pod the tracer first sees already terminal (Succeeded or Failed, every
// container ended before the tracer started) had its trace told by the
// previous instance, or by nobody: the new instance opens none, and its
// late deletion (the Job's TTL, hours later), the runtime's removal of its
// sandbox and a relist do not either. The pod is recorded as ended (its
// facts are counted as *_after_trace_end) and its end, not reported by this
// instance, as the miss pod_ended_before_start.
func TestRestartTerminalPodDeletedLater(t *testing.T) {
	for _, tc := range []struct {
		phase, reason string
		code          int32
	}{{"Succeeded", "Completed", 0}, {"Failed", "Error", 1}} {
		t.Run(tc.phase, func(t *testing.T) {
			s := terminalBeforeStart(t, tc.code, tc.phase, tc.reason)
			s.lateDeletion()
			s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxRemoved, At: s.now, Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid}}})
			s.tick(time.Minute)
			s.pod() // a relist's last view
			s.tick(time.Minute)
			s.c.Flush()
			if len(s.spans) > 0 {
				t.Errorf("%d spans for a pod that ended before the tracer started:\n%s", len(s.spans), render(s.spans))
			}
			st := s.c.Stats()
			if st.Misses["pod_ended_before_start"] != 1 || st.Misses["api_after_trace_end"] == 0 || st.Misses["runtime_after_trace_end"] == 0 {
				t.Errorf("misses %v: want pod_ended_before_start 1 and the late facts as api_after_trace_end and runtime_after_trace_end", st.Misses)
			}
		})
	}
}

// The same pod while the node still has its cgroup (the scan finds it): the
// previous instance cannot have ended its trace (it ends at the cgroup's
// removal), so this one does, once; the deletion hours later adds nothing.
func TestRestartTerminalPodCgroupStillThere(t *testing.T) {
	s := newSim(t)
	s.in(fact.Input{Start: &fact.Start{At: s.now, NodeName: "node-a"}})
	s.in(fact.Input{Cgroup: &fact.CgroupSeen{ID: 8000, Path: "/kubepods/burstable/pod" + s.uid}})
	s = terminalBeforeStartOn(s, 0, "Succeeded", "Completed")
	s.rmdir(8000, "/kubepods/burstable/pod"+s.uid)
	s.tick(3 * time.Second)
	s.one("pod")
	before := len(s.spans)
	s.lateDeletion()
	if late := s.spans[before:]; len(late) > 0 {
		t.Errorf("%d spans after the trace ended:\n%s", len(late), render(late))
	}
	if n := s.c.Stats().Misses["pod_ended_before_start"]; n != 0 {
		t.Errorf("pod_ended_before_start %d for a pod whose cgroup was still there", n)
	}
}

// The same terminal pod, its cgroup gone before the tracer started (the
// scan finds none), with a checkpoint that has no root of its trace: the
// previous instance stopped before the pod's end on the node, so nobody
// told it. This instance tells it at once (at its start: the scan is the
// fact that the pod was done on the node), not at the object's deletion
// hours later, and with no termination: none was requested (before, it
// waited for the deletion and told a forced termination that never was).
func TestRestartTerminalPodEndUntold(t *testing.T) {
	s := newSim(t)
	s.c = correlate.New(correlate.Config{NodeName: "node-a", Observer: s.o, StuckAfter: 10 * time.Second,
		Emitted: []span.SpanID{}, // a checkpoint, without this pod's root
		Sink:    span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) })})
	s.in(fact.Input{Start: &fact.Start{At: s.now, NodeName: "node-a"}})
	start := s.now
	s = terminalBeforeStartOn(s, 0, "Succeeded", "Completed")
	root := s.one("pod")
	if !root.End.Equal(start) {
		t.Errorf("root ends %s, want the instance's start %s", root.End, start)
	}
	for _, sp := range s.spans {
		if sp.Name == names.SpanPodTermination || sp.Name == names.SpanPodStartup {
			t.Errorf("%s told for a pod done before the tracer and never deleted:\n%s", sp.Name, render(s.spans))
		}
	}
	before := len(s.spans)
	s.lateDeletion()
	if late := s.spans[before:]; len(late) > 0 {
		t.Errorf("%d spans after the trace ended:\n%s", len(late), render(late))
	}
}
