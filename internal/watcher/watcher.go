package watcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/podtrace/podtrace/internal/correlate"
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
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Clock stamps Input.Time (default time.Now).
	Clock func() time.Time
}

const (
	// pendingTTL bounds how long an event about a pod not (yet) known to be
	// on this node is held: the pod and event watches are separate streams,
	// so an event (e.g. Scheduled) can arrive before its pod.
	pendingTTL = 30 * time.Second
	// maxPending bounds the events held that way. Events reported by other
	// nodes' kubelets (source.host) are not held, but those without a host
	// (scheduler, controllers) about other nodes' pods are, until they expire.
	maxPending = 1024
	// deletedTTL is how long events about a deleted pod are still passed on.
	deletedTTL = 5 * time.Minute
	// syncPoll is how often Run checks whether the caches have synced.
	syncPoll = 100 * time.Millisecond
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
// A Watcher runs once.
type Watcher struct {
	cfg   Config
	log   *slog.Logger
	clock func() time.Time

	podInf, evInf cache.SharedIndexInformer
	podReg, evReg cache.ResourceEventHandlerRegistration

	running atomic.Bool
	ready   atomic.Bool
	// ctx and out are set by Run before any informer starts.
	ctx context.Context
	out chan<- correlate.Input

	mu       sync.Mutex
	pods     map[types.UID]time.Time // pods on this node seen; value: deletion time (zero while present)
	pending  map[types.UID]*pendingEvents
	nPending int

	// statusMu serialises API status changes and their emission, so that
	// they reach out in the order they happened.
	statusMu sync.Mutex
	srcErr   [numSources]error
	synced   bool
	emitted  *correlate.APIStatus // last APIStatus sent
}

type pendingEvents struct {
	since  time.Time
	events []correlate.K8sEvent
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
		pods:    make(map[types.UID]time.Time),
		pending: make(map[types.UID]*pendingEvents),
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
	evSel := fields.OneTermEqualSelector("involvedObject.kind", "Pod").String()
	evLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = evSel
			obj, err := core.Events(metav1.NamespaceAll).List(ctx, o)
			w.observe(ctx, srcEvents, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = evSel
			wi, err := core.Events(metav1.NamespaceAll).Watch(ctx, o)
			w.observe(ctx, srcEvents, err)
			return wi, err
		},
	}

	w.podInf = cache.NewSharedIndexInformerWithOptions(podLW, &corev1.Pod{}, cache.SharedIndexInformerOptions{
		ResyncPeriod: cfg.Resync,
		Indexers:     cache.Indexers{},
	})
	w.evInf = cache.NewSharedIndexInformerWithOptions(evLW, &corev1.Event{}, cache.SharedIndexInformerOptions{
		ResyncPeriod: cfg.Resync,
		Indexers:     cache.Indexers{},
	})

	for _, s := range []struct {
		inf cache.SharedIndexInformer
		src source
	}{{w.podInf, srcPods}, {w.evInf, srcEvents}} {
		src := s.src
		if err := s.inf.SetTransform(stripObject); err != nil {
			return nil, fmt.Errorf("watcher: %s informer: %w", src, err)
		}
		if err := s.inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, _ *cache.Reflector, err error) {
			w.watchError(ctx, src, err)
		}); err != nil {
			return nil, fmt.Errorf("watcher: %s informer: %w", src, err)
		}
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
	w.evReg, err = w.evInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.onEvent,
		UpdateFunc: func(_, obj any) { w.onEvent(obj) },
		// A deleted Event (TTL expiry) says nothing new.
	})
	if err != nil {
		return nil, fmt.Errorf("watcher: event handler: %w", err)
	}
	return w, nil
}

// Ready reports whether both caches (pods, events) have synced. It stays
// true afterwards, even while the API server is unreachable (the caches then
// hold the last known state); the APIStatus inputs tell reachability.
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
		// Events are matched against the pods known to be on this node, so
		// start their informer once the pods are listed: otherwise the
		// initial list of events would race the pods'.
		if !w.waitSynced(ctx, w.podReg) {
			return
		}
		w.log.Debug("pods synced")
		wg.Go(func() { w.evInf.RunWithContext(ctx) })
		if !w.waitSynced(ctx, w.evReg) {
			return
		}
		w.log.Debug("events synced")
		w.ready.Store(true)
		w.setSynced()
	})
	wg.Wait()
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
	var flush []correlate.K8sEvent
	if deleted {
		w.pods[pod.UID] = now
		w.pruneDeletedLocked(now)
	} else {
		if _, seen := w.pods[pod.UID]; !seen {
			w.pods[pod.UID] = time.Time{}
		}
		if p := w.pending[pod.UID]; p != nil {
			flush = p.events
			w.nPending -= len(p.events)
			delete(w.pending, pod.UID)
		}
	}
	w.mu.Unlock()

	if !w.send(correlate.Input{Pod: &info}) {
		return
	}
	for i := range flush {
		if !w.send(correlate.Input{Event: &flush[i]}) {
			return
		}
	}
}

func (w *Watcher) pruneDeletedLocked(now time.Time) {
	for uid, at := range w.pods {
		if !at.IsZero() && now.Sub(at) > deletedTTL {
			delete(w.pods, uid)
		}
	}
}

// --- events ---

func (w *Watcher) onEvent(obj any) {
	ev, ok := obj.(*corev1.Event)
	if !ok || ev == nil {
		return
	}
	k, ok := ConvertEvent(ev)
	if !ok {
		return
	}
	if !w.admitEvent(ev, k) {
		return
	}
	w.send(correlate.Input{Event: &k})
}

// admitEvent reports whether the event is about a pod on this node and
// should be sent now. An event about a pod not known yet is held (see
// pendingTTL) and sent when the pod shows up.
func (w *Watcher) admitEvent(ev *corev1.Event, k correlate.K8sEvent) bool {
	uid := ev.InvolvedObject.UID
	now := w.clock()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pods[uid]; ok {
		return true
	}
	// The informer stores a pod before its handler runs: the pod may be
	// known to the cache already.
	if w.podInStore(ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, uid) {
		return true
	}
	w.prunePendingLocked(now)
	if h := ev.Source.Host; h != "" && h != w.cfg.NodeName {
		// Reported by another node's kubelet: not about a pod here.
		return false
	}
	if w.nPending >= maxPending {
		w.log.Debug("dropping event about unknown pod: too many pending",
			"pod", ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name, "reason", ev.Reason)
		return false
	}
	p := w.pending[uid]
	if p == nil {
		p = &pendingEvents{since: now}
		w.pending[uid] = p
	}
	p.events = append(p.events, k)
	w.nPending++
	return false
}

func (w *Watcher) podInStore(ns, name string, uid types.UID) bool {
	key := name
	if ns != "" {
		key = ns + "/" + name
	}
	obj, exists, err := w.podInf.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return false
	}
	pod, ok := obj.(*corev1.Pod)
	return ok && pod.UID == uid && pod.Spec.NodeName == w.cfg.NodeName
}

func (w *Watcher) prunePendingLocked(now time.Time) {
	if w.nPending == 0 {
		return
	}
	for uid, p := range w.pending {
		if now.Sub(p.since) > pendingTTL {
			w.nPending -= len(p.events)
			delete(w.pending, uid)
		}
	}
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
// refuses podtrace's credentials (403) or does not accept them (401).
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

// stripObject drops what podtrace never reads from cached objects:
// managedFields are often the largest part of a pod.
func stripObject(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
