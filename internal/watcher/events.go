// Kubernetes Events, watched per pod: a window on involvedObject.uid while
// the pod starts or terminates, at most Config.MaxEventWatches at once.

package watcher

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// eventWindow is an informer on one pod's events.
type eventWindow struct {
	inf      cache.SharedIndexInformer
	reg      cache.ResourceEventHandlerRegistration
	cancel   context.CancelFunc
	openedAt time.Time
}

// wake asks the reconcile loop to run soon.
func (w *Watcher) wake() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

func (w *Watcher) reconcileLoop(ctx context.Context) {
	t := time.NewTicker(reconcilePeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.poke:
		}
		w.reconcile(ctx)
	}
}

// reconcile opens and closes event windows so that the pods needing one
// have one, at most MaxEventWatches at once; it returns the windows it
// opened.
func (w *Watcher) reconcile(ctx context.Context) []*eventWindow {
	now := w.clock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneDeletedLocked(now)
	waiting := w.queueLocked(now)
	if len(waiting) == 0 {
		return nil
	}
	free := w.cfg.MaxEventWatches - len(w.windows)
	if free < len(waiting) {
		var requeued []types.UID
		free, requeued = w.makeRoomLocked(now, free, len(waiting))
		waiting = append(waiting, requeued...)
	}
	return w.openWindowsLocked(ctx, now, free, waiting)
}

// queueLocked closes the windows no pod needs any more, schedules the
// sweep of a pod first seen quiet, and returns the pods waiting for a
// window, longest waiting first.
func (w *Watcher) queueLocked(now time.Time) []types.UID {
	var waiting []types.UID
	swept := false
	for uid, s := range w.pods {
		switch {
		case !s.announced:
			w.closeWindowLocked(uid)
			s.waitingSince = time.Time{}
		case !s.needsEvents(now):
			if w.windows[uid] != nil && s.inQuietTail(now) {
				continue // just quiet: the window stays a little
			}
			s.waitingSince = time.Time{}
			w.closeWindowLocked(uid)
			switch {
			case !s.goneAt.IsZero():
				s.sweepAt = time.Time{}
			case !s.caughtUp:
				// First seen quiet: its history, with a sweep, unless
				// its Events have expired (Config.EventTTL).
				s.caughtUp = true
				if w.cfg.EventTTL > 0 && !s.lastChange.IsZero() && now.Sub(s.lastChange) > w.cfg.EventTTL {
					w.unswept.Add(1)
					break
				}
				s.sweepAt, swept = now, true
			}
		case w.windows[uid] == nil:
			if s.waitingSince.IsZero() {
				s.waitingSince = now
			}
			waiting = append(waiting, uid)
		}
	}
	if swept {
		w.wakeSweeper()
	}
	sortBy(waiting, func(uid types.UID) time.Time { return w.pods[uid].waitingSince })
	return waiting
}

// makeRoomLocked frees slots for the pods that need events: it closes the
// windows held past maxHold, oldest first, until free slots reach want. It
// returns the free slots and the pods whose windows it closed (they queue
// again).
func (w *Watcher) makeRoomLocked(now time.Time, free, want int) (int, []types.UID) {
	var held []types.UID
	for uid, win := range w.windows {
		if now.Sub(win.openedAt) > maxHold {
			held = append(held, uid)
		}
	}
	sortBy(held, func(uid types.UID) time.Time { return w.windows[uid].openedAt })
	var requeued []types.UID
	for _, uid := range held {
		if free >= want {
			break
		}
		requeued = append(requeued, uid)
		w.closeWindowLocked(uid)
		w.pods[uid].waitingSince = now
		free++
	}
	return free, requeued
}

// openWindowsLocked opens windows for waiting pods while slots are free; it
// returns the windows it opened.
func (w *Watcher) openWindowsLocked(ctx context.Context, now time.Time, free int, waiting []types.UID) []*eventWindow {
	var opened []*eventWindow
	for _, uid := range waiting {
		if free <= 0 {
			break
		}
		if w.windows[uid] != nil {
			continue
		}
		win, err := w.openWindowLocked(ctx, uid, now)
		if err != nil {
			w.log.Warn("event window", "pod", uid, "err", err)
			continue
		}
		s := w.pods[uid]
		// The window's initial list supersedes a sweep due.
		s.waitingSince, s.sweepAt, s.caughtUp = time.Time{}, time.Time{}, true
		opened = append(opened, win)
		free--
	}
	return opened
}

// Want asks for pod uid's events now: the model saw the kubelet act on a
// pod the API's status still shows quiet (the runtime's stop signal to a
// container of a pod not terminating). The window opens at once, and its
// initial list brings what the kubelet wrote before acting (Killing,
// Unhealthy). uid may be a static pod's own (the kubelet's, in its cgroup
// paths), which its mirror's Events name. Unknown pods are ignored. Safe
// for concurrent use.
func (w *Watcher) Want(uid string) {
	w.mu.Lock()
	s := w.pods[types.UID(uid)]
	if s == nil {
		for _, o := range w.pods {
			if o.eventUID == types.UID(uid) {
				s = o
				break
			}
		}
	}
	if s != nil {
		s.stirredAt = w.clock()
	}
	w.mu.Unlock()
	if s != nil {
		w.wake()
	}
}

func sortBy(uids []types.UID, key func(types.UID) time.Time) {
	slices.SortFunc(uids, func(a, b types.UID) int {
		if c := key(a).Compare(key(b)); c != 0 {
			return c
		}
		return strings.Compare(string(a), string(b))
	})
}

// eventSelector selects the Events whose involved object is the pod with
// UID evUID.
func eventSelector(evUID types.UID) string {
	return fields.OneTermEqualSelector("involvedObject.uid", string(evUID)).String()
}

// openWindowLocked starts an informer on the events about pod uid.
func (w *Watcher) openWindowLocked(ctx context.Context, uid types.UID, now time.Time) (*eventWindow, error) {
	s := w.pods[uid]
	client := w.cfg.Client
	ns := s.namespace
	sel := eventSelector(s.eventsUID(uid))
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			obj, err := client.ListEvents(ctx, ns, o)
			w.observe(ctx, srcEvents, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			wi, err := client.WatchEvents(ctx, ns, o)
			w.observe(ctx, srcEvents, err)
			return wi, err
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, w.cfg.Client), &corev1.Event{}, cache.SharedIndexInformerOptions{
		ResyncPeriod: w.cfg.Resync,
		Indexers:     cache.Indexers{},
	})
	if err := inf.SetTransform(stripObject); err != nil {
		return nil, err
	}
	if err := inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		w.watchError(ctx, srcEvents, err)
	}); err != nil {
		return nil, err
	}
	reg, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.onEvent(uid, obj, true) },
		UpdateFunc: func(_, obj any) { w.onEvent(uid, obj, false) },
		// A deleted Event (TTL expiry) says nothing new.
	})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	win := &eventWindow{inf: inf, reg: reg, cancel: cancel, openedAt: now}
	w.windows[uid] = win
	w.winWG.Go(func() { inf.RunWithContext(wctx) })
	return win, nil
}

func (w *Watcher) closeWindowLocked(uid types.UID) {
	if win := w.windows[uid]; win != nil {
		win.cancel()
		delete(w.windows, uid)
	}
}

// onEvent handles an event from pod uid's window. add is true for an
// object the window had not seen: the initial list of a window resends
// what an earlier window may have sent already.
func (w *Watcher) onEvent(uid types.UID, obj any, add bool) {
	w.eventsReceived.Add(1)
	ev, ok := obj.(*corev1.Event)
	if !ok || ev == nil {
		return
	}
	k, ok := ConvertEvent(ev)
	if !ok {
		return
	}
	w.mu.Lock()
	s := w.pods[uid]
	if s == nil || ev.InvolvedObject.UID != uid && ev.InvolvedObject.UID != s.eventUID {
		// Gone, or the field selector was not honoured (fake clients,
		// proxies).
		w.mu.Unlock()
		return
	}
	if rv := ev.ResourceVersion; add && rv != "" && s.sent[ev.UID] == rv {
		w.mu.Unlock()
		return
	}
	s.sent[ev.UID] = ev.ResourceVersion
	w.mu.Unlock()
	w.send(fact.Input{Event: &k})
}
