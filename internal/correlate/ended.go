// Ended pods: a trace ends once. After a pod's root span is out, later
// facts about it (the API's late deletion of a terminal pod, a relist, the
// runtime's sandbox removal and its CNI DEL, a late Event, a cgroup of its)
// must not start a second trace with the same IDs, however late they come.
// Each ended pod leaves a tombstone, a few dozen bytes, for as long as the
// API server or the runtime can still speak of it: until the API deleted
// the object and the runtime removed the sandbox (then endedLinger more),
// at most endedRetention, at most maxEnded of them (the oldest go first,
// counted as the miss "ended_pod_evicted"). Facts about a tombstoned pod
// are counted as a miss by their source (api_after_trace_end,
// event_after_trace_end, runtime_after_trace_end, cgroup_after_trace_end:
// see isEnded) and dropped. The whole pod is kept
// for goneRetention besides (cleanup.go): a CNI run after its end (the
// runtime's DEL again when the kubelet removes the sandbox, often after
// the object is gone) is measured in its namespace and counted as the
// miss "cni_after_trace_end", never added to the trace outside its root.

package correlate

import (
	"time"

	"github.com/podchron/podchron/internal/names"
)

const (
	// maxEnded caps the tombstones.
	maxEnded = 65536
	// endedRetention caps a tombstone's life: a Job's pod kept by its
	// history limit can stay in the API for days.
	endedRetention = 7 * 24 * time.Hour
	// endedLinger: how long a tombstone outlives the last word of both the
	// API server (deletion) and the runtime (sandbox removal), for facts
	// already on their way.
	endedLinger = 10 * time.Minute
)

// tombstone is what is kept of an ended pod.
type tombstone struct {
	at             time.Time // the trace's end
	apiDeleted     bool      // the API object is gone (or never was known)
	sandboxRemoved bool      // the runtime removed its sandbox (or none was known)
	releasing      bool      // both: queued in releasing
}

// endedRef is a tombstone in a queue, by the time it is due.
type endedRef struct {
	uid string
	at  time.Time
}

// endedPods holds the tombstones: by UID, in the order they were made (for
// the time and count caps), and those released, in release order.
type endedPods struct {
	ended     map[string]*tombstone
	order     []endedRef
	releasing []endedRef
}

// bury leaves a tombstone for a pod whose trace ended.
func (c *Correlator) bury(p *pod) {
	if c.ended == nil {
		c.ended = map[string]*tombstone{}
	}
	for len(c.ended) >= maxEnded && len(c.order) > 0 {
		ref := c.order[0]
		c.order = c.order[1:]
		if _, ok := c.ended[ref.uid]; ok {
			delete(c.ended, ref.uid)
			c.miss(names.MissEndedPodEvicted)
		}
	}
	ts := &tombstone{at: c.now,
		apiDeleted:     p.info != nil && p.info.Deleted,
		sandboxRemoved: p.sandboxID == "" || !p.sandboxRemoved.IsZero()}
	c.ended[p.uid] = ts
	c.order = append(c.order, endedRef{uid: p.uid, at: c.now})
	if len(c.order) > 2*len(c.ended)+1024 {
		c.compactEnded()
	}
	c.maybeRelease(p.uid, ts)
}

// isEnded reports whether uid's trace ended; a late fact about it is
// counted as late, the miss its source gives (api_after_trace_end,
// event_after_trace_end, runtime_after_trace_end: usual late words;
// cgroup_after_trace_end: the kubelet starting something the trace cannot
// hold).
func (c *Correlator) isEnded(uid string, late names.Miss) bool {
	if c.traceEnded(uid) {
		c.miss(late)
		return true
	}
	return false
}

// traceEnded reports whether uid's trace ended, without counting a miss.
func (c *Correlator) traceEnded(uid string) bool {
	_, gone := c.gone[uid]
	_, ended := c.ended[uid]
	return gone || ended
}

// endedAPIDeleted notes the API's deletion of an ended pod.
func (c *Correlator) endedAPIDeleted(uid string) {
	if ts := c.ended[uid]; ts != nil {
		ts.apiDeleted = true
		c.maybeRelease(uid, ts)
	}
}

// endedSandboxRemoved notes the runtime's removal of an ended pod's sandbox.
func (c *Correlator) endedSandboxRemoved(uid string) {
	if ts := c.ended[uid]; ts != nil {
		ts.sandboxRemoved = true
		c.maybeRelease(uid, ts)
	}
}

func (c *Correlator) maybeRelease(uid string, ts *tombstone) {
	if ts.releasing || !ts.apiDeleted || !ts.sandboxRemoved {
		return
	}
	ts.releasing = true
	c.releasing = append(c.releasing, endedRef{uid: uid, at: c.now})
}

// expireEnded drops the tombstones past their time: released ones after
// endedLinger, any after endedRetention.
func (c *Correlator) expireEnded() {
	for len(c.releasing) > 0 && c.now.Sub(c.releasing[0].at) > endedLinger {
		delete(c.ended, c.releasing[0].uid)
		c.releasing = c.releasing[1:]
	}
	for len(c.order) > 0 && c.now.Sub(c.order[0].at) > endedRetention {
		if ts, ok := c.ended[c.order[0].uid]; ok && ts.at.Equal(c.order[0].at) {
			delete(c.ended, c.order[0].uid)
		}
		c.order = c.order[1:]
	}
	if len(c.ended) == 0 {
		c.order, c.releasing = nil, nil
	}
}

// compactEnded drops the order's entries whose tombstone is gone.
func (c *Correlator) compactEnded() {
	kept := make([]endedRef, 0, len(c.ended))
	for _, ref := range c.order {
		if ts, ok := c.ended[ref.uid]; ok && ts.at.Equal(ref.at) {
			kept = append(kept, ref)
		}
	}
	c.order = kept
}
