// Resumed event windows: a window that starts from a resource version the
// watcher knows is early enough, instead of listing the namespace's Events.

package watcher

import (
	"strconv"
	"sync/atomic"
	"time"
)

// A window's initial list reads its namespace's Events from etcd (no watch
// cache for Events by default) and the API server filters them there: in
// the fleet test, two lists per pod lifecycle were the tracers' whole
// memory cost at the API server. A watch that starts from a resource
// version instead replays only the namespace's changes since it. Two
// windows can start so:
//   - a pod's first window, when the watcher had seen an Events resource
//     version before the pod was created (its creationTimestamp, less
//     resumeSlack): the pod's Events, the scheduler's before the binding
//     included, all come after it. The versions are the Events' own (the
//     windows' lists and watches, the sweeps), never the pod watch's: a
//     cluster may keep Events in an etcd of their own
//     (kube-apiserver --etcd-servers-overrides=/events#..., kops' default),
//     whose revisions are not the pods', and a watch from a pod's version
//     there could start in the Events' future and see nothing. A node with
//     no window for the last resumeHorizon has no such version: its next
//     new pod's window lists;
//   - any later window of a pod, from where its previous window stopped:
//     everything up to there was handed over (the window had synced, never
//     relisted, and hands Events over in the order of the watch).
//
// Resource versions are etcd revisions, compared as numbers here (the API
// promises only opaque strings; one that is not a number is never
// resumed from). A start older than resumeHorizon is not tried, and one
// the API server no longer has (410 Gone) makes the window list, as
// before: the reflector relists, and the list function then lists.
const (
	// resumeSlack covers the node's clock against the API server's and a
	// creationTimestamp truncated to the second.
	resumeSlack = 5 * time.Second
	// resumeHorizon stays inside what kube-apiserver keeps of etcd's
	// history: it compacts every 5 minutes (--etcd-compaction-interval)
	// to the revision of the previous round, so 5 to 10 minutes remain.
	resumeHorizon = 4 * time.Minute
)

// rvSample: an Events resource version seen, and when it was first seen:
// every Event written after that time has a later one.
type rvSample struct {
	at time.Time
	rv uint64
}

// rvHistory keeps the Events' resource versions seen in the last
// resumeHorizon (one sample per change, at most one a reconcile).
type rvHistory struct {
	s []rvSample
}

// note records an Events resource version seen at now (lower ones than
// the last are not news).
func (h *rvHistory) note(now time.Time, rv string) {
	v, ok := parseRV(rv)
	if !ok {
		return
	}
	if n := len(h.s); n > 0 && h.s[n-1].rv >= v {
		return
	}
	i := 0
	for i < len(h.s) && now.Sub(h.s[i].at) > resumeHorizon {
		i++
	}
	h.s = append(h.s[:0], h.s[i:]...)
	h.s = append(h.s, rvSample{at: now, rv: v})
}

// before returns the latest sample seen at or before t.
func (h *rvHistory) before(t time.Time) (rvSample, bool) {
	for i := len(h.s) - 1; i >= 0; i-- {
		if !h.s[i].at.After(t) {
			return h.s[i], true
		}
	}
	return rvSample{}, false
}

func parseRV(rv string) (uint64, bool) {
	v, err := strconv.ParseUint(rv, 10, 64)
	return v, err == nil && v > 0
}

// windowStart is what a window knows of where it started and what it
// handed over, for the next window of its pod.
type windowStart struct {
	// resume: the resource version it started from without a list (0: it
	// listed).
	resume uint64
	// from: the resource version of its start (resume, or its list's).
	from atomic.Uint64
	// lists counts its list function's calls: a second is a relist (the
	// resume point was gone, or the watch expired).
	lists atomic.Int32
	// handed is the highest resource version of the Events it handed over.
	handed atomic.Uint64
}

// hand notes an Event handed over (nil: not a window's, a sweep's).
func (ws *windowStart) hand(rv string) {
	if ws == nil {
		return
	}
	v, ok := parseRV(rv)
	if !ok {
		return
	}
	for {
		cur := ws.handed.Load()
		if v <= cur || ws.handed.CompareAndSwap(cur, v) {
			return
		}
	}
}

// next is where the pod's next window may start (0: it lists): everything
// up to it was handed over, if the window synced (its start handed over in
// full) and never relisted.
func (ws *windowStart) next(synced bool) uint64 {
	from := ws.from.Load()
	if !synced || from == 0 || ws.lists.Load() != 1 {
		return 0
	}
	return max(from, ws.handed.Load())
}
