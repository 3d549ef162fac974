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

import "github.com/podchron/podchron/internal/span"

// endedBeforeRestart reports whether the previous instance emitted the
// root of uid's trace; the pod then gets a tombstone, as if this instance
// had ended it (ended.go), and the caller drops the fact.
func (c *Correlator) endedBeforeRestart(uid string) bool {
	if _, ok := c.prior[span.RootSpanID(span.TraceIDForPod(uid))]; !ok {
		return false
	}
	c.miss("ended_before_restart")
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
