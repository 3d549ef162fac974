// Restart-safe: what the previous tracer instance on this node emitted.
// A checkpoint of the span IDs emitted on the node (as the kubelet keeps
// its own; internal/checkpoint, in the daemon's --state-dir) is given to
// a new instance as Config.Emitted. Without them, a pod's phase that the
// previous instance told and that the runtime's first snapshot still shows
// (an exited attempt, a back-off, a stopped sandbox) would be told again
// from the snapshot, with the same span ID and other content; and a pod
// whose root the previous instance emitted would be opened again by its
// later facts (the API's deletion of a terminal pod, the sandbox's
// removal and its CNI DEL).

package correlate

import (
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// endedBeforeRestart reports whether the previous instance emitted the
// root of uid's trace; the pod then gets a tombstone, as if this instance
// had ended it (ended.go), and the caller drops the fact.
func (c *Correlator) endedBeforeRestart(uid string) bool {
	if _, ok := c.prior[span.RootSpanID(span.TraceIDForPod(uid))]; !ok {
		return false
	}
	c.miss(names.MissEndedBeforeRestart)
	p := &pod{uid: uid, trace: span.TraceIDForPod(uid)}
	p.finished = true
	c.bury(p)
	return true
}

// toldBefore reports whether the previous instance emitted uid's root, and
// whether that is known: only when this instance was given a checkpoint
// (Config.Emitted not nil). Without one, a pod whose end came before this
// instance is taken to be the previous instance's to have told (resume.go).
func (c *Correlator) toldBefore(uid string) (told, known bool) {
	if c.prior == nil {
		return false, false
	}
	_, told = c.prior[span.RootSpanID(span.TraceIDForPod(uid))]
	return told, true
}

// stopToldBefore is, for a pod the kubelet (or a controller) ends without
// an API deletion, when its termination began if the previous instance
// told a stop of one of its containers' last runs (a container.stop span
// ID in the checkpoint) that this instance saw no stop signal of: the
// stop signal was a kernel fact only the previous instance had. The
// termination is then the previous instance's to have begun, and this
// one's to end: it starts it at the earliest exit of such a container as
// the runtime reported it (the stop's signal came before, within its
// grace period), or at this instance's start while the container still
// runs. Zero when no such stop was told (or no checkpoint was given).
func (c *Correlator) stopToldBefore(p *pod) time.Time {
	if c.prior == nil {
		return time.Time{}
	}
	var first time.Time
	for _, ct := range p.containers {
		if ct.sandbox || ct.nextAttempt() != nil {
			continue
		}
		if _, told := c.prior[p.spanID(ctKey(names.SpanContainerStop, ct))]; !told {
			continue
		}
		at := ct.exitAt
		if !ct.exited || at.IsZero() {
			at = c.started
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

// stopBegun is when the runtime's first stop of one of the pod's
// containers' last runs began: its stop signal (firstStop), else a stop the
// previous instance told (stopToldBefore), else, for a pod this instance
// first saw mid-life, the end of its containers (stoppedBefore); zero if
// none.
func (c *Correlator) stopBegun(p *pod) time.Time {
	if at := p.firstStop(); !at.IsZero() {
		return at
	}
	if at := c.stopToldBefore(p); !at.IsZero() {
		return at
	}
	return c.stoppedBefore(p)
}

// stoppedBefore: for a pod this instance first saw mid-life, which the
// kubelet ended (the caller knows why: an eviction) and whose every
// container the API shows ended with none running on the node, the
// stop was before this instance, or its signal was a kernel fact this
// instance did not see: the termination began at the earliest end the API
// reports (whole seconds), or, when the status has none (the kubelet
// reports a container removed before its status as terminated with no
// time), at this instance's start. Zero otherwise.
func (c *Correlator) stoppedBefore(p *pod) time.Time {
	if p.observedFrom.IsZero() || p.info == nil {
		return time.Time{}
	}
	for _, ct := range p.containers {
		if !ct.sandbox && !ct.exited && len(ct.pids) > 0 {
			return time.Time{} // still running here: its stop is to come
		}
	}
	var first time.Time
	n := 0
	for _, st := range p.info.Statuses {
		if st.State.Running != nil {
			return time.Time{}
		}
		// Terminated; or, for a container the runtime removed before the
		// kubelet's status (seen on 1.34 after an eviction), waiting with
		// its last run terminated.
		t := st.State.Terminated
		if t == nil {
			t = st.LastState.Terminated
		}
		if t == nil {
			return time.Time{}
		}
		n++
		if !t.FinishedAt.IsZero() && (first.IsZero() || t.FinishedAt.Before(first)) {
			first = t.FinishedAt
		}
	}
	if n == 0 {
		return time.Time{}
	}
	if first.IsZero() || first.After(c.started) {
		first = c.started
	}
	return first
}

// untoldWindow bounds how long before this instance's start a container's
// end can be that the checkpoint says nobody told: the previous instance
// holds back only the ends the runtime had not confirmed when it stopped
// (its last poll's interval), and a tracer's restart (a rollout, a crash)
// takes seconds. An older end belongs to a run that ended before the
// previous instance (it did not tell it either: it had no facts of it), or
// one it told and the checkpoint's ring has since forgotten.
const untoldWindow = 10 * time.Second

// untoldEnd: with a checkpoint, a container that ended shortly before this
// instance whose run no instance told (the previous one stopped while the
// runtime had not yet confirmed the end, so it held the run back): this
// instance tells it, from the runtime's facts.
func (c *Correlator) untoldEnd(ct *container, end time.Time) bool {
	if c.prior == nil || ct.pod == nil || ct.sandbox || end.Before(c.started.Add(-untoldWindow)) {
		return false
	}
	for _, kind := range []string{names.SpanContainerRun, names.SpanContainerInit, names.SpanContainerEphemeral} {
		if _, told := c.prior[ct.pod.spanID(ctKey(kind, ct))]; told {
			return false
		}
	}
	return true
}
