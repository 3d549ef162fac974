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
	// standby: open for a quiet pod (see podState.standby); it yields its
	// slot to any pod that needs events.
	standby bool
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
// have one, at most MaxEventWatches at once, and the slots left are given to
// standby pods; it returns the windows it opened.
func (w *Watcher) reconcile(ctx context.Context) []*eventWindow {
	now := w.clock()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pruneDeletedLocked(now)
	waiting, standby := w.queueLocked(now)
	if len(waiting)+len(standby) == 0 {
		return nil
	}
	free := w.cfg.MaxEventWatches - len(w.windows)
	if free < len(waiting) {
		var requeued []types.UID
		free, requeued = w.makeRoomLocked(now, free, len(waiting))
		waiting = append(waiting, requeued...)
	}
	return w.openWindowsLocked(ctx, now, free, waiting, standby)
}

// queueLocked closes the windows no pod needs any more, marks the open ones
// standby or not, and returns the pods waiting for a window (those needing
// events, and those that would take a standby one), longest waiting first.
func (w *Watcher) queueLocked(now time.Time) (waiting, standby []types.UID) {
	for uid, s := range w.pods {
		need := s.announced && s.needsEvents(now)
		stand := s.announced && !need && s.standby()
		win := w.windows[uid]
		switch {
		case !need && !stand:
			w.closeWindowLocked(uid)
			s.waitingSince = time.Time{}
		case win != nil:
			win.standby = !need
		default:
			if s.waitingSince.IsZero() {
				s.waitingSince = now
			}
			if need {
				waiting = append(waiting, uid)
			} else {
				standby = append(standby, uid)
			}
		}
	}
	byWait := func(uid types.UID) time.Time { return w.pods[uid].waitingSince }
	sortBy(waiting, byWait)
	sortBy(standby, byWait)
	return waiting, standby
}

// makeRoomLocked frees slots for the pods that need events: it closes
// standby windows first, then windows held past maxHold, oldest first, until
// free slots reach want. It returns the free slots and the pods whose held
// windows it closed (they queue again).
func (w *Watcher) makeRoomLocked(now time.Time, free, want int) (int, []types.UID) {
	var stand, held []types.UID
	for uid, win := range w.windows {
		switch {
		case win.standby:
			stand = append(stand, uid)
		case now.Sub(win.openedAt) > maxHold:
			held = append(held, uid)
		}
	}
	byOpen := func(uid types.UID) time.Time { return w.windows[uid].openedAt }
	sortBy(stand, byOpen)
	sortBy(held, byOpen)
	var requeued []types.UID
	for _, uid := range append(stand, held...) {
		if free >= want {
			break
		}
		if !w.windows[uid].standby {
			requeued = append(requeued, uid)
		}
		w.closeWindowLocked(uid)
		w.pods[uid].waitingSince = now
		free++
	}
	return free, requeued
}

// openWindowsLocked opens windows for waiting pods, then standby ones, while
// slots are free; it returns the windows it opened.
func (w *Watcher) openWindowsLocked(ctx context.Context, now time.Time, free int, waiting, standby []types.UID) []*eventWindow {
	var opened []*eventWindow
	for i, uid := range append(waiting, standby...) {
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
		win.standby = i >= len(waiting)
		w.pods[uid].waitingSince = time.Time{}
		opened = append(opened, win)
		free--
	}
	return opened
}

func sortBy(uids []types.UID, key func(types.UID) time.Time) {
	slices.SortFunc(uids, func(a, b types.UID) int {
		if c := key(a).Compare(key(b)); c != 0 {
			return c
		}
		return strings.Compare(string(a), string(b))
	})
}

// openWindowLocked starts an informer on the events about pod uid.
func (w *Watcher) openWindowLocked(ctx context.Context, uid types.UID, now time.Time) (*eventWindow, error) {
	s := w.pods[uid]
	client := w.cfg.Client
	ns := s.namespace
	evUID := s.eventUID
	if evUID == "" {
		evUID = uid
	}
	sel := fields.OneTermEqualSelector("involvedObject.uid", string(evUID)).String()
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
