package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/podchron/podchron/internal/correlate"
)

// Config configures a Watcher.
type Config struct {
	// Client talks to the API server (see NewClient). Required.
	Client kubernetes.Interface
	// NodeName is this node's name: only pods bound to it are watched.
	// Required.
	NodeName string
	// Resync, if > 0, re-emits every cached pod and event at this period.
	Resync time.Duration
	// MaxEventWatches bounds the event windows (one event watch each) open
	// at once (default DefaultMaxEventWatches). Pods beyond it wait for a
	// slot; what happened meanwhile comes with the window's initial list.
	MaxEventWatches int
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Clock stamps Input.Time and times the event windows (default
	// time.Now).
	Clock func() time.Time
}

// DefaultMaxEventWatches is Config.MaxEventWatches' default.
const DefaultMaxEventWatches = 32

const (
	// settle is how long a pod's event window stays open after the pod
	// became quiet (Ready, or finished): the kubelet's last start-up
	// events (Started) are written asynchronously, after the status.
	settle = 30 * time.Second
	// goneLinger is how long the window stays open after the pod is gone
	// from the API server: Killing and other late events.
	goneLinger = 30 * time.Second
	// maxHold is how long a window may stay open while other pods wait for
	// a slot; after that it yields and queues again (crash-looping pods
	// stay un-Ready for good).
	maxHold = time.Minute
	// deletedTTL is how long a deleted pod's state is kept: an update seen
	// late does not bring it back.
	deletedTTL = 5 * time.Minute
	// syncPoll is how often Run checks whether the caches have synced.
	syncPoll = 100 * time.Millisecond
	// reconcilePeriod is how often the event windows are re-evaluated
	// (pod changes re-evaluate them at once).
	reconcilePeriod = time.Second
)

// Watcher watches the API server for this node's pods and the events about
// them and sends them, converted, to the correlator:
//
//   - Input{Pod} on every add/update of a pod bound to the node (the last
//     known state with Deleted=true once it is gone);
//   - Input{Event} for every add/update (count bump) of a core/v1 Event whose
//     involved object is one of those pods;
//   - Input{API} when the API server's reachability changes: unavailable
//     (or forbidden by RBAC) while listing/watching fails, available once
//     the caches have synced and again after an outage.
//
// What it receives and caches depends on this node's pods only, not on the
// cluster's size. Pods are watched with spec.nodeName=<node>. Core/v1
// Events cannot be selected by node (their field selectors are the involved
// object's fields, reason, type, source component and metadata — not
// source.host), so events are watched per pod: while a pod is "active" —
// starting, not Ready (crash loop, image back-off, failing readiness),
// terminating, and for a while after each of these ends — an event window
// is open on it: an informer on the pod's namespace with field selector
// involvedObject.uid=<pod UID>, whose initial list brings what happened
// before the window opened. A quiet pod (Ready and settled) keeps a window
// only if a slot is free and it has a liveness or startup probe the kernel
// does not see (httpGet, tcpSocket, grpc): the kubelet's Killing event is
// then received before the restart it announces. For other quiet pods,
// anything the kubelet reports that does not change the pod's status (a
// probe failing below its threshold) is received, counted, with the next
// window (e.g. when the container restarts or the pod is deleted). At most
// MaxEventWatches windows are open at once; pods that need events take the
// slots of standby windows first.
//
// A Watcher runs once.
type Watcher struct {
	cfg   Config
	log   *slog.Logger
	clock func() time.Time

	podInf cache.SharedIndexInformer
	podReg cache.ResourceEventHandlerRegistration

	running atomic.Bool
	ready   atomic.Bool

	podsReceived, eventsReceived atomic.Uint64

	// ctx and out are set by Run before any informer starts.
	ctx context.Context
	out chan<- correlate.Input
	// poke asks the reconcile loop to re-evaluate the windows now.
	poke chan struct{}
	// winWG tracks the event windows' goroutines.
	winWG sync.WaitGroup

	mu      sync.Mutex
	pods    map[types.UID]*podState // pods on this node seen
	windows map[types.UID]*eventWindow

	// statusMu serialises API status changes and their emission, so that
	// they reach out in the order they happened.
	statusMu sync.Mutex
	srcErr   [numSources]error
	synced   bool
	emitted  *correlate.APIStatus // last APIStatus sent
}

// podState is what the watcher keeps about one of the node's pods.
type podState struct {
	namespace string
	// eventUID is the UID the pod's Events name: its own, or for a static
	// pod's mirror the static pod's (the kubernetes.io/config.mirror
	// annotation), which the kubelet records its Events against.
	eventUID types.UID
	// announced: its Input{Pod} was sent (events follow their pod).
	announced bool
	// goneAt is when the pod was deleted from the API server (zero while
	// it exists).
	goneAt time.Time
	// terminating: deletion requested.
	terminating bool
	// quietSince is when the pod became Ready or finished (zero while it
	// is neither).
	quietSince time.Time
	// probed: a container has a liveness or startup probe the kernel does
	// not see run (httpGet, tcpSocket, grpc): the kubelet's Killing event is
	// the only word on its restarts, and it comes before the pod's status
	// changes.
	probed bool
	// waitingSince: the pod wants a window and has none (zero otherwise).
	waitingSince time.Time
	// sent: resource version of each of its events last sent, so that a
	// window's initial list does not resend what an earlier one sent.
	sent map[types.UID]string
}

// standby reports whether a quiet pod should keep a window when a slot is
// free: a pod whose liveness or startup probes the kernel does not see, so
// that a restart's Killing event (sent before the container is stopped)
// is received when it happens.
func (s *podState) standby() bool {
	return s.probed && s.goneAt.IsZero() && !s.terminating
}

// needsEvents reports whether the pod should have an event window at now.
func (s *podState) needsEvents(now time.Time) bool {
	switch {
	case !s.goneAt.IsZero():
		return now.Sub(s.goneAt) <= goneLinger
	case s.terminating, s.quietSince.IsZero():
		return true
	}
	return now.Sub(s.quietSince) <= settle
}

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

type source int

const (
	srcPods source = iota
	srcEvents
	numSources
)

func (s source) String() string {
	if s == srcPods {
		return "pods"
	}
	return "events"
}

// New returns a Watcher; call Run to start it.
func New(cfg Config) (*Watcher, error) {
	if cfg.Client == nil {
		return nil, errors.New("watcher: Config.Client is nil")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("watcher: Config.NodeName is empty")
	}
	if cfg.Resync < 0 {
		cfg.Resync = 0
	}
	if cfg.MaxEventWatches <= 0 {
		cfg.MaxEventWatches = DefaultMaxEventWatches
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	w := &Watcher{
		cfg:     cfg,
		log:     cfg.Logger.With("component", "k8s-watch", "node", cfg.NodeName),
		clock:   cfg.Clock,
		poke:    make(chan struct{}, 1),
		pods:    make(map[types.UID]*podState),
		windows: make(map[types.UID]*eventWindow),
	}

	core := cfg.Client.CoreV1()
	podSel := fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	podLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = podSel
			obj, err := core.Pods(metav1.NamespaceAll).List(ctx, o)
			w.observe(ctx, srcPods, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = podSel
			wi, err := core.Pods(metav1.NamespaceAll).Watch(ctx, o)
			w.observe(ctx, srcPods, err)
			return wi, err
		},
	}
	w.podInf = cache.NewSharedIndexInformerWithOptions(podLW, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		ResyncPeriod: cfg.Resync,
		Indexers:     cache.Indexers{},
	})
	if err := w.podInf.SetTransform(stripObject); err != nil {
		return nil, fmt.Errorf("watcher: pods informer: %w", err)
	}
	if err := w.podInf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
		w.watchError(ctx, srcPods, err)
	}); err != nil {
		return nil, fmt.Errorf("watcher: pods informer: %w", err)
	}
	var err error
	w.podReg, err = w.podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.onPod(obj, false) },
		UpdateFunc: func(_, obj any) { w.onPod(obj, false) },
		DeleteFunc: func(obj any) { w.onPod(obj, true) },
	})
	if err != nil {
		return nil, fmt.Errorf("watcher: pod handler: %w", err)
	}
	return w, nil
}

// Ready reports whether the pods have been listed and the event windows
// opened then have listed their events. It stays true afterwards, even
// while the API server is unreachable (the caches then hold the last known
// state); the APIStatus inputs tell reachability.
func (w *Watcher) Ready() bool { return w.ready.Load() }

// Status returns the last API status sent, or ok=false before the first.
func (w *Watcher) Status() (st correlate.APIStatus, ok bool) {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	if w.emitted == nil {
		return correlate.APIStatus{}, false
	}
	return *w.emitted, true
}

// Run watches until ctx is done and returns ctx.Err() once every goroutine
// it started has exited. Sends to out block (until ctx is done): the caller
// must drain out.
func (w *Watcher) Run(ctx context.Context, out chan<- correlate.Input) error {
	if out == nil {
		return errors.New("watcher: nil output channel")
	}
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("watcher: Run called more than once")
	}
	w.ctx, w.out = ctx, out

	var wg sync.WaitGroup
	wg.Go(func() { w.podInf.RunWithContext(ctx) })
	wg.Go(func() {
		// Event windows follow the pods known to be on this node: start
		// them once the pods are listed.
		if !w.waitSynced(ctx, w.podReg) {
			return
		}
		w.log.Debug("pods synced")
		opened := w.reconcile(ctx)
		for _, win := range opened {
			if !w.waitSynced(ctx, win.reg) {
				return
			}
		}
		w.log.Debug("events synced", "windows", len(opened))
		w.ready.Store(true)
		w.setSynced()
		w.reconcileLoop(ctx)
	})
	wg.Wait()
	w.winWG.Wait()
	return ctx.Err()
}

func (w *Watcher) waitSynced(ctx context.Context, reg cache.ResourceEventHandlerRegistration) bool {
	err := wait.PollUntilContextCancel(ctx, syncPoll, true, func(context.Context) (bool, error) {
		return reg.HasSynced(), nil
	})
	return err == nil
}

// send delivers in to out, stamped with the clock, unless ctx is done.
func (w *Watcher) send(in correlate.Input) bool {
	in.Time = w.clock()
	select {
	case w.out <- in:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// --- pods ---

func (w *Watcher) onPod(obj any, deleted bool) {
	w.podsReceived.Add(1)
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod == nil {
		w.log.Debug("unexpected object in pod informer", "type", fmt.Sprintf("%T", obj))
		return
	}
	// The field selector restricts the watch to this node; check again in
	// case it was not honoured (fake clients, proxies).
	if pod.Spec.NodeName != w.cfg.NodeName {
		return
	}
	info := Convert(pod)
	info.Deleted = deleted

	now := w.clock()
	w.mu.Lock()
	s := w.pods[pod.UID]
	if s == nil {
		s = &podState{namespace: pod.Namespace, sent: map[types.UID]string{}}
		w.pods[pod.UID] = s
	}
	s.eventUID = pod.UID
	if hash := pod.Annotations[MirrorAnnotation]; hash != "" {
		s.eventUID = types.UID(hash)
	}
	if deleted {
		if s.goneAt.IsZero() {
			s.goneAt = now
		}
		w.pruneDeletedLocked(now)
	} else {
		s.terminating = pod.DeletionTimestamp != nil
		s.probed = unseenProbes(pod)
		quiet := podReady(pod) || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
		switch {
		case !quiet:
			s.quietSince = time.Time{}
		case s.quietSince.IsZero():
			s.quietSince = now
		}
	}
	w.mu.Unlock()

	if !w.send(correlate.Input{Pod: &info}) {
		return
	}
	w.mu.Lock()
	s.announced = true
	w.mu.Unlock()
	w.wake()
}

// unseenProbes reports whether a container has a liveness or startup probe
// that is not an exec probe (the kernel sees exec probes run, and the model
// tells a liveness restart from them without the kubelet's event).
func unseenProbes(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for _, pr := range []*corev1.Probe{cs[i].LivenessProbe, cs[i].StartupProbe} {
				if pr != nil && pr.Exec == nil {
					return true
				}
			}
		}
	}
	return false
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (w *Watcher) pruneDeletedLocked(now time.Time) {
	for uid, s := range w.pods {
		if !s.goneAt.IsZero() && now.Sub(s.goneAt) > deletedTTL && w.windows[uid] == nil {
			delete(w.pods, uid)
		}
	}
}

// wake asks the reconcile loop to run soon.
func (w *Watcher) wake() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// --- event windows ---

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
	var waiting, standby []types.UID
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
	if len(waiting)+len(standby) == 0 {
		return nil
	}
	byWait := func(uid types.UID) time.Time { return w.pods[uid].waitingSince }
	byOpen := func(uid types.UID) time.Time { return w.windows[uid].openedAt }
	sortBy(waiting, byWait)
	sortBy(standby, byWait)
	free := w.cfg.MaxEventWatches - len(w.windows)
	if free < len(waiting) {
		// Pods that need events take the slots of standby windows first,
		// then of windows held past maxHold (which queue again).
		var stand, held []types.UID
		for uid, win := range w.windows {
			switch {
			case win.standby:
				stand = append(stand, uid)
			case now.Sub(win.openedAt) > maxHold:
				held = append(held, uid)
			}
		}
		sortBy(stand, byOpen)
		sortBy(held, byOpen)
		var requeued []types.UID
		for _, uid := range append(stand, held...) {
			if free >= len(waiting) {
				break
			}
			if !w.windows[uid].standby {
				requeued = append(requeued, uid)
			}
			w.closeWindowLocked(uid)
			w.pods[uid].waitingSince = now
			free++
		}
		waiting = append(waiting, requeued...)
	}
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
	core := w.cfg.Client.CoreV1()
	ns := s.namespace
	evUID := s.eventUID
	if evUID == "" {
		evUID = uid
	}
	sel := fields.OneTermEqualSelector("involvedObject.uid", string(evUID)).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			obj, err := core.Events(ns).List(ctx, o)
			w.observe(ctx, srcEvents, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			wi, err := core.Events(ns).Watch(ctx, o)
			w.observe(ctx, srcEvents, err)
			return wi, err
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(lw, &corev1.Event{}, cache.SharedIndexInformerOptions{
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
	w.send(correlate.Input{Event: &k})
}

// --- API status ---

// observe records the outcome of a list or watch call.
func (w *Watcher) observe(ctx context.Context, src source, err error) {
	if err != nil && (ctx.Err() != nil || ignorable(err)) {
		return
	}
	w.setSourceErr(src, err)
}

// watchError is the informers' WatchErrorHandler: it sees list failures
// (already recorded by observe) and watches that ended with an error, after
// which the reflector backs off and relists. Only errors the API server sent
// (a Status, e.g. 403 as a watch event) are recorded here: a watch stream cut
// short says nothing by itself, the outcome of the next list or watch does.
func (w *Watcher) watchError(ctx context.Context, src source, err error) {
	var status apierrors.APIStatus
	if err == nil || ctx.Err() != nil || ignorable(err) || !errors.As(err, &status) {
		w.log.Debug("list/watch ended", "resource", src.String(), "err", err)
		return
	}
	w.log.Debug("list/watch failed", "resource", src.String(), "err", err)
	w.setSourceErr(src, err)
}

// ignorable errors say nothing about reachability: watches expire (410),
// end normally, or the server asks to slow down (429: it is up).
func ignorable(err error) bool {
	return errors.Is(err, io.EOF) ||
		errors.Is(err, context.Canceled) ||
		apierrors.IsResourceExpired(err) || apierrors.IsGone(err) ||
		apierrors.IsTooManyRequests(err)
}

// Forbidden reports whether err means the API server is reachable but
// refuses podchron's credentials (403) or does not accept them (401).
func Forbidden(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

func (w *Watcher) setSourceErr(src source, err error) {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	w.srcErr[src] = err
	w.updateStatusLocked()
}

func (w *Watcher) setSynced() {
	w.statusMu.Lock()
	defer w.statusMu.Unlock()
	w.synced = true
	w.updateStatusLocked()
}

// updateStatusLocked computes the API status from the sources' last
// outcomes and sends it if it changed. Before the caches have synced the
// API server only counts as unavailable (on an error), never as available.
func (w *Watcher) updateStatusLocked() {
	var st correlate.APIStatus
	var firstErr error
	for src, err := range w.srcErr {
		if err == nil {
			continue
		}
		if firstErr == nil {
			firstErr = fmt.Errorf("%s: %w", source(src), err)
		}
		if Forbidden(err) {
			st.Forbidden = true
		}
	}
	switch {
	case firstErr != nil:
		st.Err = firstErr.Error()
	case w.synced:
		st.Available = true
	default:
		return // starting, no verdict yet
	}
	if e := w.emitted; e != nil && e.Available == st.Available && e.Forbidden == st.Forbidden {
		return
	}
	st.Since = w.clock()
	if st.Available {
		w.log.Info("API server available")
	} else {
		w.log.Warn("API server unavailable", "forbidden", st.Forbidden, "err", st.Err)
	}
	w.emitted = &st
	send := st
	w.send(correlate.Input{API: &send})
}

// stripObject drops what podchron never reads from cached objects:
// managedFields are often the largest part of a pod.
func stripObject(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
