package correlate_test

import (
	"strings"
	"time"

	"github.com/podchron/podchron/internal/correlate"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/span"
)

// Where the two instances' trees differ from the uninterrupted run's, the
// facts the second instance can know may not allow the same tree. Each
// named exception below says why, and applies only where the stream shows
// its cause at that cut; any other difference fails the test.
const (
	excCNIBegun = "a CNI plugin run begun before the cut: its exec is a kernel fact only the first instance saw, " +
		"and the first emits a run only with its finished phase"
	excStartupInProgress = "a start-up in progress at the cut: begun before the second instance, " +
		"which resumes the pod and decides no start-up (resume.go)"
	excTerminationBySignal = "a termination begun before the cut by the runtime's stop signal (a kernel fact), " +
		"with no API deletion: the second instance has no fact that the pod is going"
	excPhantomPod = "a pod known only from CNI runs before the cut: no runtime sandbox and no API object " +
		"names it to the second instance"
	excStopBegun = "a container's stop begun before the cut by the runtime's stop signal (a kernel fact only the " +
		"first instance saw) whose end the first did not emit: the second instance sees the exit, not the stop"
	excHookBegun = "a preStop hook begun before the cut, in a termination the first instance had not ended (it emits " +
		"the hook with its stop): the hook's start (the kernel's exec of an exec hook, the deletion's arrival for a " +
		"sleep or httpGet hook) is a fact only the first instance saw; the API's deletionTimestamp minus the grace " +
		"period could give the second a sleep or httpGet hook's start (not done)"
	excSessionCap = "a probe, hook or exec session span past the cap of 32 per container run the first instance had " +
		"reached (bounds.go): the second counts the cap anew (the checkpoint keeps span IDs, not counts)"
	excSessionInGap = "an exec session (a probe, a hook, a kubectl exec) that began and ended between the first " +
		"instance's last input and the second's start: its exec and exit reached the ring buffer after the first " +
		"stopped reading and before the second attached, so no instance saw it, and the scan finds no process"
	excRestartAllBegun = "a pod's in-place restart (RestartAllContainers) begun before the cut from its trigger's exit, " +
		"a kernel fact only the first instance saw (the runtime had not reported it to the second): the second begins " +
		"it from the AllContainersRestarting condition, at the condition's time, so under another span ID, or, when the " +
		"condition was over too, not at all (the init containers' runs again go under the start-up)"
	excStopBeforeGoing = "a container the kubelet stopped with no termination known, its run and stop told at the first " +
		"instance's shutdown under the root: the status that made the stop a termination (an eviction's) came after the cut"
	excLateAfterEnd = "a fact of a trace the first instance ended (its root is in the checkpoint), joined to that " +
		"trace by the uninterrupted run: the second instance keeps the ended pod's tombstone, not its trace, " +
		"and counts the fact (its source's *_after_trace_end miss) instead"
)

// cutView is what decides the exceptions at one cut.
type cutView struct {
	inputs []fact.Input
	i      int
	at     time.Time
	want   map[span.SpanID]span.Span
	phase  map[span.TraceID]map[string]span.Span // the uninterrupted run's spans by trace and name
	first  map[span.SpanID]bool                  // what the first instance emitted
	// secondRestart: the pod.restart span IDs the instances emitted.
	secondRestart map[span.SpanID]bool
}

func newCutView(inputs []fact.Input, i int, at time.Time, want map[span.SpanID]span.Span) cutView {
	v := cutView{inputs: inputs, i: i, at: at, want: want, phase: map[span.TraceID]map[string]span.Span{}, first: map[span.SpanID]bool{},
		secondRestart: map[span.SpanID]bool{}}
	for _, s := range want {
		if v.phase[s.TraceID] == nil {
			v.phase[s.TraceID] = map[string]span.Span{}
		}
		if _, ok := v.phase[s.TraceID][s.Name]; !ok {
			v.phase[s.TraceID][s.Name] = s
		}
	}
	return v
}

// begunBefore: the trace's span of that name (uninterrupted) began before the cut.
func (v cutView) begunBefore(tid span.TraceID, name string) bool {
	s, ok := v.phase[tid][name]
	return ok && s.Start.Before(v.at)
}

// endedBefore: the first instance emitted the trace's root (it ended
// before the cut).
func (v cutView) endedBefore(tid span.TraceID) bool {
	return v.first[span.RootSpanID(tid)]
}

// underStartup: the span is a child of the trace's pod.startup, or a
// child's child (a CNI run of the start-up's sandbox).
func (v cutView) underStartup(w span.Span) bool {
	s, ok := v.phase[w.TraceID]["pod.startup"]
	if !ok {
		return false
	}
	if w.Parent == s.SpanID {
		return true
	}
	parent, ok := v.want[w.Parent]
	return ok && parent.Parent == s.SpanID
}

// runtimeNamed: the runtime (or the API) named the trace's pod before the cut.
func (v cutView) runtimeNamed(tid span.TraceID) bool {
	for _, x := range v.inputs[:v.i] {
		if ev := x.Runtime; ev != nil {
			if ev.Sandbox != nil && span.TraceIDForPod(ev.Sandbox.PodUID) == tid ||
				ev.Container != nil && span.TraceIDForPod(ev.Container.PodUID) == tid {
				return true
			}
		}
		if x.Pod != nil && span.TraceIDForPod(x.Pod.UID) == tid {
			return true
		}
	}
	return false
}

// missingWhy names the exception for a span of the uninterrupted run that
// neither instance emitted, "" when none applies.
func (v cutView) missingWhy(w span.Span) string {
	tid := w.TraceID
	if strings.HasPrefix(w.Name, "cni.") && w.Start.Before(v.at) {
		return excCNIBegun
	}
	if v.endedBefore(tid) {
		return excLateAfterEnd
	}
	if w.Name == "container.stop" && w.Start.Before(v.at) {
		return excStopBegun
	}
	if w.Name == "container.prestop" && w.Start.Before(v.at) {
		return excHookBegun
	}
	switch {
	case w.Name == "pod.startup" || v.underStartup(w):
		if v.begunBefore(tid, "pod.startup") {
			return excStartupInProgress
		}
	}
	switch w.Name {
	case "pod":
		if !v.runtimeNamed(tid) {
			return excPhantomPod
		}
	}
	if why := v.terminationWhy(w); why != "" {
		return why
	}
	if v.sessionInGap(w) {
		return excSessionInGap
	}
	if w.Name == "pod.restart" && w.Start.Before(v.at) {
		return excRestartAllBegun
	}
	return ""
}

// restartAllBegun: the trace's pod.restart (uninterrupted) began before
// the cut, and g is a pod.restart of the second instance or a child of one.
func (v cutView) restartAllBegun(g span.Span) bool {
	if !v.begunBefore(g.TraceID, "pod.restart") {
		return false
	}
	return g.Name == "pod.restart" || v.secondRestart[g.Parent]
}

// terminationWhy names the exception for a span of the termination.
func (v cutView) terminationWhy(w span.Span) string {
	tid := w.TraceID
	switch {
	case w.Name == "pod.termination", w.Name == "container.stop", w.Name == "pod.cleanup", strings.HasPrefix(w.Name, "cni.DEL"):
	default:
		if w.Name == "pod.startup" && !v.runtimeNamed(tid) {
			return excPhantomPod
		}
		return ""
	}
	if v.begunBefore(tid, "pod.termination") && !v.deletedBy(tid, v.phase[tid]["pod.termination"].Start) {
		return excTerminationBySignal
	}
	return ""
}

// movedWhy names the exception for a span both runs have in different
// places (got is where the two instances put it).
func (v cutView) movedWhy(got, w span.Span) string {
	if got.Name == "container.stop" && v.first[got.SpanID] && got.Parent == span.RootSpanID(got.TraceID) &&
		v.phase[w.TraceID]["pod.termination"].SpanID == w.Parent && !v.deletedBy(w.TraceID, v.at) {
		return excStopBeforeGoing
	}
	if r, ok := v.phase[w.TraceID]["pod.restart"]; v.restartAllBegun(got) || ok && w.Parent == r.SpanID && r.Start.Before(v.at) {
		return excRestartAllBegun
	}
	if strings.HasPrefix(w.Name, "cni.DEL") && got.Parent == span.RootSpanID(w.TraceID) {
		return v.terminationWhy(w)
	}
	return ""
}

// extraWhy names the exception for a span the uninterrupted run does not
// have at all, "" when none applies.
func (v cutView) extraWhy(g span.Span) string {
	if v.restartAllBegun(g) {
		return excRestartAllBegun
	}
	if !strings.HasPrefix(g.Name, "probe.") && !strings.HasPrefix(g.Name, "hook.") && g.Name != "container.exec" {
		return ""
	}
	n := 0
	for _, w := range v.want {
		if w.TraceID == g.TraceID && w.Name == g.Name && w.Parent == g.Parent {
			n++
		}
	}
	if n >= correlate.MaxSessionSpans {
		return excSessionCap
	}
	return ""
}

// sessionInGap: an exec session's span whose process exited before the
// second instance started, with the exit's kernel fact arriving after the
// cut (the first instance never had it).
func (v cutView) sessionInGap(w span.Span) bool {
	if !strings.HasPrefix(w.Name, "probe.") && w.Name != "container.exec" && w.Name != "container.poststart" && w.Name != "container.prestop" {
		return false
	}
	if !w.End.Before(v.at) || v.first[w.SpanID] {
		return false
	}
	for _, x := range v.inputs[v.i:] {
		if e, ok := x.Kernel.(*kernel.ExitEvent); ok && e.Time.Equal(w.End) {
			return true
		}
	}
	return false
}

// deletedBy: the API showed the trace's pod deleted (a deletionTimestamp,
// or gone) in an input before t.
func (v cutView) deletedBy(tid span.TraceID, t time.Time) bool {
	for _, x := range v.inputs {
		if x.Time.After(t) {
			break
		}
		if x.Pod != nil && (x.Pod.Deleted || x.Pod.DeletionTimestamp != nil) && span.TraceIDForPod(x.Pod.UID) == tid {
			return true
		}
	}
	return false
}
