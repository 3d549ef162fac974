// Kubernetes Events, watched per pod: a window on involvedObject.uid while
// the pod starts or terminates, at most Config.MaxEventWatches at once.

package watcher

import (
	"context"
	"slices"
	"strconv"
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
	start    *windowStart // resume.go
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
	for _, win := range w.windows {
		w.rvs.note(now, win.inf.LastSyncResourceVersion())
	}
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
				// its Events have expired (Config.EventTTL), when they
				// would otherwise be lost (sweep.go, sweepTime).
				s.caughtUp = true
				if w.cfg.EventTTL > 0 && !s.lastChange.IsZero() && now.Sub(s.lastChange) > w.cfg.EventTTL {
					w.unswept.Add(1)
					break
				}
				s.sweepAt, swept = w.sweepTime(s, uid, now), true
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

// openWindowLocked starts an informer on the events about pod uid: from
// the pod's resume point when it has one (resume.go), else from a list.
func (w *Watcher) openWindowLocked(ctx context.Context, uid types.UID, now time.Time) (*eventWindow, error) {
	s := w.pods[uid]
	client := w.cfg.Client
	ns := s.namespace
	sel := eventSelector(s.eventsUID(uid))
	start := &windowStart{}
	if s.resumeRV != 0 && now.Sub(s.resumeAt) < resumeHorizon {
		start.resume = s.resumeRV
	}
	s.resumeRV, s.resumeAt = 0, time.Time{}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			n := start.lists.Add(1)
			if n == 1 && start.resume != 0 {
				// No list: the reflector watches from here.
				start.from.Store(start.resume)
				w.windowsResumed.Add(1)
				return &corev1.EventList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatUint(start.resume, 10)}}, nil
			}
			if n == 2 && start.resume != 0 {
				// The watch from the resume point failed (410 Gone:
				// compacted away; or any other watch error): the
				// reflector relists.
				w.resumesExpired.Add(1)
			}
			o.FieldSelector = sel
			obj, err := client.ListEvents(ctx, ns, o)
			w.observe(ctx, srcEvents, err)
			if err != nil {
				w.windowListsFailed.Add(1)
				if ctx.Err() != nil {
					w.windowListsCanceled.Add(1)
				}
				return nil, err
			}
			w.windowLists.Add(1)
			if v, ok := parseRV(obj.ResourceVersion); ok && n == 1 {
				start.from.Store(v)
			}
			w.mu.Lock()
			w.rvs.note(w.clock(), obj.ResourceVersion)
			w.mu.Unlock()
			return obj, nil
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			wi, err := client.WatchEvents(ctx, ns, o)
			w.observe(ctx, srcEvents, err)
			return wi, err
		},
	}
	// A list and a watch, never the watch-list stream: its start would
	// be a list all the same (Events have no watch cache), and the list
	// function must be called to resume.
	inf := cache.NewSharedIndexInformerWithOptions(noWatchList{lw}, &corev1.Event{}, cache.SharedIndexInformerOptions{
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
		AddFunc:    func(obj any) { w.onEvent(uid, start, obj, true) },
		UpdateFunc: func(_, obj any) { w.onEvent(uid, start, obj, false) },
		// A deleted Event (TTL expiry) says nothing new.
	})
	if err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	win := &eventWindow{inf: inf, reg: reg, cancel: cancel, openedAt: now, start: start}
	w.windows[uid] = win
	w.winWG.Go(func() { inf.RunWithContext(wctx) })
	return win, nil
}

// noWatchList is a ListWatch the reflector lists and watches, never
// streams (watch-list).
type noWatchList struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells client-go's reflector not to use
// the watch-list stream.
func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// closeWindowLocked stops pod uid's window; the pod's next window may
// start where this one stopped.
func (w *Watcher) closeWindowLocked(uid types.UID) {
	win := w.windows[uid]
	if win == nil {
		return
	}
	win.cancel()
	delete(w.windows, uid)
	if s := w.pods[uid]; s != nil {
		if rv := win.start.next(win.reg.HasSynced()); rv != 0 {
			s.resumeRV, s.resumeAt = rv, w.clock()
		}
	}
}

// onEvent handles an event from pod uid's window. add is true for an
// object the window had not seen: the initial list of a window resends
// what an earlier window may have sent already.
func (w *Watcher) onEvent(uid types.UID, start *windowStart, obj any, add bool) {
	w.eventsReceived.Add(1)
	ev, ok := obj.(*corev1.Event)
	if !ok || ev == nil {
		return
	}
	// Handed over, whatever becomes of it here (in the watch's order: the
	// next window starts after it).
	defer start.hand(ev.ResourceVersion)
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
