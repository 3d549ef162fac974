// Sweeps: one list of a pod's events, for a pod first seen quiet (its
// history), in place of a window.

package watcher

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	// sweepTimeout bounds one sweep's request.
	sweepTimeout = 30 * time.Second
	// sweepRetry is how long a sweep that failed waits before it is tried
	// again, the first time; it doubles up to maxSweepRetry.
	sweepRetry    = 30 * time.Second
	maxSweepRetry = 5 * time.Minute
)

// sweepTime is when the sweep of pod uid (state s), first seen quiet at
// now, is due.
// Its Events serve its trace's root span, which the model ends when the pod
// does; the pod's next event window (its termination's, or a restart's)
// lists them all the same, having no start to resume from. The sweep only
// saves those that would expire first: it waits until sweepLead before the
// oldest can (the pod's creation + Config.EventTTL; Events are written
// after it, and the TTL runs from their last write), and is not made if a
// window opens first (openWindowsLocked). A rollout of the tracer across a
// cluster then lists pods' Events as their TTL comes, not all in its first
// minutes (make fleet: 4,760 lists reading 27 M Events from etcd, the API
// server's RSS 844 -> 2,003 MiB, in the 4 minutes of a 500-node start).
// Swept at once: a finished pod (its trace may end without a window), a
// mirror pod (the kubelet wrote the static pod's Events before the
// mirror's creation), a pod created more than the TTL ago (which of its
// Events are left, and when they expire, is not known), and every pod when
// the TTL is not known (Config.EventTTL < 0).
func (w *Watcher) sweepTime(s *podState, uid types.UID, now time.Time) time.Time {
	ttl := w.cfg.EventTTL
	mirror := s.eventsUID(uid) != uid
	if ttl <= 0 || s.quietKind != quietReady || mirror || s.created.IsZero() {
		return now
	}
	at := s.created.Add(ttl - sweepLead(ttl))
	if at.Before(now) {
		return now
	}
	return at
}

// sweepLead is how long before its oldest Events can expire a pod is swept:
// a quarter of the TTL, at most 10 minutes (the sweeps queued on the
// client's rate limit, a failed one's retry, the node's clock against the
// API server's creationTimestamp).
func sweepLead(ttl time.Duration) time.Duration {
	return min(ttl/4, 10*time.Minute)
}

func (w *Watcher) wakeSweeper() {
	select {
	case w.sweepPoke <- struct{}{}:
	default:
	}
}

// sweepLoop lists the events of the pods whose sweep is due, one pod at a
// time (the client's rate limit paces them), until ctx is done. A sweep
// due later wakes it at its time.
func (w *Watcher) sweepLoop(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		uid, next, ok := w.nextSweep()
		switch {
		case ok:
			w.sweep(ctx, uid)
			if ctx.Err() != nil {
				return
			}
			continue
		case next > 0:
			t.Reset(next)
		default:
			t.Reset(time.Hour)
		}
		select {
		case <-ctx.Done():
			return
		case <-w.sweepPoke:
		case <-t.C:
		}
	}
}

// nextSweep returns the pod whose sweep is due first (ok), or how long
// until the next sweep is due (0: none is).
func (w *Watcher) nextSweep() (uid types.UID, next time.Duration, ok bool) {
	now := w.clock()
	w.mu.Lock()
	defer w.mu.Unlock()
	var first time.Time
	for u, s := range w.pods {
		if s.sweepAt.IsZero() || w.windows[u] != nil || !s.goneAt.IsZero() {
			continue
		}
		if first.IsZero() || s.sweepAt.Before(first) || s.sweepAt.Equal(first) && u < uid {
			first, uid = s.sweepAt, u
		}
	}
	switch {
	case first.IsZero():
		return "", 0, false
	case first.After(now):
		// A test clock may not advance with real time: poll it at most
		// every second.
		return "", min(first.Sub(now), time.Second), false
	}
	w.pods[uid].sweepAt = time.Time{}
	return uid, 0, true
}

// sweep lists pod uid's events once (resourceVersion "0": any state, from
// a watch cache where the API server keeps one for Events; none by
// default) and hands on those not sent already. A failed sweep is due
// again after a backoff (sweepRetry, doubling to maxSweepRetry): without a
// watch cache each one reads the namespace's events from etcd, and retries
// at a fixed pace kept an overloaded API server overloaded (make fleet).
// Only a refusal (RBAC) changes the API status: a slow or failed list
// while the pod watch is fine does not make the API server unavailable
// (the pod watch and the windows say when it is).
func (w *Watcher) sweep(ctx context.Context, uid types.UID) {
	w.mu.Lock()
	s := w.pods[uid]
	if s == nil {
		w.mu.Unlock()
		return
	}
	ns, evUID := s.namespace, s.eventsUID(uid)
	w.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, sweepTimeout)
	defer cancel()
	list, err := w.cfg.Client.ListEvents(lctx, ns, metav1.ListOptions{FieldSelector: eventSelector(evUID), ResourceVersion: "0"})
	w.sweeps.Add(1)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		if Forbidden(err) {
			w.observe(ctx, srcEvents, err)
		}
		w.mu.Lock()
		s.sweepFails++
		retry := min(sweepRetry<<min(s.sweepFails-1, 8), maxSweepRetry)
		if s.sweepAt.IsZero() && s.goneAt.IsZero() {
			s.sweepAt = w.clock().Add(retry)
		}
		w.mu.Unlock()
		w.log.Debug("event sweep failed", "pod", uid, "retry_in", retry, "err", err)
		return
	}
	w.mu.Lock()
	s.sweepFails = 0
	w.mu.Unlock()
	for i := range list.Items {
		ev := &list.Items[i]
		if _, err := stripObject(ev); err != nil {
			continue
		}
		w.onEvent(uid, nil, ev, true) // no window: nothing to resume from but the list
	}
	// Everything up to the list was handed over: the pod's next window
	// starts there, unless it is too late by then (resume.go).
	if v, ok := parseRV(list.ResourceVersion); ok {
		w.mu.Lock()
		now := w.clock()
		w.rvs.note(now, list.ResourceVersion)
		if w.windows[uid] == nil && s.resumeRV == 0 {
			s.resumeRV, s.resumeAt = v, now
		}
		w.mu.Unlock()
	}
}
