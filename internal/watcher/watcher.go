package watcher

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podchron/podchron/internal/chans"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Config configures a Watcher.
type Config struct {
	// Client talks to the API server (see NewClient). Required.
	Client Client
	// NodeName is this node's name: only pods bound to it are watched.
	// Required.
	NodeName string
	// Resync, if > 0, re-emits every cached pod and event at this period.
	Resync time.Duration
	// MaxEventWatches bounds the event windows (one event watch each) open
	// at once (default DefaultMaxEventWatches). Pods beyond it wait for a
	// slot; what happened meanwhile comes with the window's initial list.
	MaxEventWatches int
	// EventTTL is how long the API server keeps an Event after its last
	// write (kube-apiserver --event-ttl; default DefaultEventTTL). A pod
	// first seen quiet whose status records no change within it (its
	// creation, a condition's transition, a container's start or end)
	// gets no sweep: what its Events told has expired, or is still being
	// rewritten (a probe failing below its threshold) and comes with its
	// next window. Negative: every pod first seen quiet is swept.
	EventTTL time.Duration
	// NoEndpointSlices: do not watch EndpointSlices (endpoints.go): the
	// traces then do not show Services adding and withdrawing pods.
	NoEndpointSlices bool
	// PodLabels are the pod labels passed on (k8s.pod.label.<key>).
	PodLabels []string
	// Logger (default slog.Default()).
	Logger *slog.Logger
	// Clock stamps Input.Time and times the event windows (default
	// time.Now).
	Clock func() time.Time
}

// DefaultMaxEventWatches is Config.MaxEventWatches' default.
const DefaultMaxEventWatches = 32

// DefaultEventTTL is Config.EventTTL's default: kube-apiserver's
// --event-ttl default.
const DefaultEventTTL = time.Hour

const (
	// settle is how long a stirred pod (Want, a restart, a change of how
	// it is quiet) keeps its window.
	settle = 30 * time.Second
	// quietTail is how long a pod's window stays open once the pod is
	// quiet (Ready, or finished): the kubelet's Started events are
	// written asynchronously, mostly before the status that made the pod
	// Ready, sometimes just after. Anything later comes with the window
	// the pod's end opens (its termination, or its finish stirs it).
	quietTail = 5 * time.Second
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
//   - Input{Endpoint} for every change of what an EndpointSlice says of
//     one of those pods (endpoints.go; unless Config.NoEndpointSlices);
//   - Input{API} when the API server's reachability changes: unavailable
//     (or forbidden by RBAC) while listing/watching fails, available once
//     the caches have synced and again after an outage.
//
// What it receives and caches depends on this node's pods only, not on the
// cluster's size. Pods are watched with spec.nodeName=<node>. Core/v1
// Events cannot be selected by node (their field selectors are the involved
// object's fields, reason, type, source component and metadata — not
// source.host), so events are watched per pod, and only while the pod is in
// transition: starting or not Ready (crash loop, image back-off, failing
// readiness), terminating, or stirred (a container restarted, the pod
// went from Ready to a finished phase, or the model saw the kubelet act on
// it: Want — its stop signal to a container, or containers that outlive
// the pod's object). Then an event window is open on it: an informer on
// the pod's namespace with field selector involvedObject.uid=<pod UID>,
// whose initial list brings what happened before the window opened (Events
// live an hour). A window closes quietTail after its pod became quiet
// (Ready, or finished), settle after it was stirred, and as soon as the
// pod is gone: the model ends a pod's trace when its object is gone,
// unless its containers still run, and then it asks (Want).
//
// What the kubelet writes about a quiet pod comes with the window its next
// change opens, its end included (a termination, or a finish that stirs
// it), so before the trace's root span. A pod first seen quiet (the
// tracer's start) holds no window: its history comes with a sweep, one
// list of its events. Across a fleet, the tracers then add one pod watch
// per node plus a window per pod in transition (seconds per pod at a
// steady churn), not a watch per pod. At most MaxEventWatches windows are
// open at once; pods beyond wait for a slot, held windows yield to them
// after maxHold.
//
// The API server keeps no watch cache for Events by default
// (kube-apiserver's DefaultWatchCacheSizes): a window's initial list and a
// sweep each read the namespace's Events from etcd and filter them there.
// That is why neither is made more often than a pod changes, and why a
// window starts without a list when it can (resume.go): a new pod's first
// window from an Events resource version seen before the pod was created,
// a later one from where the pod's last window stopped, each replaying
// only the namespace's changes since.
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
	// endpointChanges counts the EndpointChanges sent,
	// endpointSliceErrors the EndpointSlices' failed lists and watches.
	endpointChanges, endpointSliceErrors atomic.Uint64

	// ctx and out are set by Run before any informer starts.
	ctx context.Context
	out chan<- fact.Input
	// poke asks the reconcile loop to re-evaluate the windows now.
	poke chan struct{}
	// winWG tracks the event windows' goroutines.
	winWG sync.WaitGroup

	mu      sync.Mutex
	pods    map[types.UID]*podState // pods on this node seen
	windows map[types.UID]*eventWindow

	// sweepPoke wakes the sweeper (sweep.go); sweeps counts the sweeps
	// made (lists sent).
	sweepPoke chan struct{}
	sweeps    atomic.Uint64
	// unswept counts the pods first seen quiet with no sweep: no change
	// in their status within EventTTL.
	unswept atomic.Uint64
	// windowLists counts the event windows' lists; windowsResumed the
	// windows started without one, resumesExpired those of them whose
	// start the API server no longer had (they listed) (resume.go).
	windowLists, windowsResumed, resumesExpired atomic.Uint64
	// windowListsFailed counts the windows' failed lists,
	// windowListsCanceled those ended by their window's close.
	windowListsFailed, windowListsCanceled atomic.Uint64
	// rvs: the Events' resource versions seen in the last minutes (under
	// mu; resume.go).
	rvs rvHistory

	// statusMu serialises API status changes and their emission, so that
	// they reach out in the order they happened.
	statusMu sync.Mutex
	srcErr   [numSources]error
	synced   bool
	emitted  *fact.APIStatus // last APIStatus sent
}

// podState is what the watcher keeps about one of the node's pods.
type podState struct {
	namespace string
	// eventUID is the UID the pod's Events name: its own, or for a static
	// pod's mirror the static pod's (the kubernetes.io/config.mirror
	// annotation), which the kubelet records its Events against.
	eventUID types.UID
	// created is its creationTimestamp (the API server's clock).
	created time.Time
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
	// quietKind is how it is quiet since quietSince (quietKind()).
	quietKind string
	// restarts is the sum of its containers' restart counts in the last
	// status seen.
	restarts int64
	// stirredAt is when a quiet pod last stirred: a container restarted
	// (restarts grew), or the model saw the kubelet stop one (Want). Zero
	// if never.
	stirredAt time.Time
	// waitingSince: the pod wants a window and has none (zero otherwise).
	waitingSince time.Time
	// sweepAt is when its events are due to be listed once (zero: no
	// sweep due): a pod first seen quiet (sweepTime: maybe much later),
	// or a sweep to retry; see sweep.go.
	sweepAt time.Time
	// caughtUp: its events were listed once (a window or a sweep was
	// started), so a quiet pod is not swept again for its history.
	caughtUp bool
	// lastChange is the latest time its object records (LastChange,
	// the API server's clock), kept only until caughtUp.
	lastChange time.Time
	// sweepFails counts its sweeps failed in a row (their backoff).
	sweepFails int
	// sent: resource version of each of its events last sent, so that a
	// window's initial list does not resend what an earlier one sent.
	sent map[types.UID]string
	// resumeRV is where its next window may start without a list (0: it
	// lists), set when resumeAt (resume.go).
	resumeRV uint64
	resumeAt time.Time
}

// needsEvents reports whether the pod should have an event window at now.
func (s *podState) needsEvents(now time.Time) bool {
	stirred := !s.stirredAt.IsZero() && now.Sub(s.stirredAt) <= settle
	switch {
	case !s.goneAt.IsZero():
		// Gone: the model has ended its trace, unless it asked (Want).
		return stirred && !s.stirredAt.Before(s.goneAt)
	}
	return s.terminating || s.quietSince.IsZero() || stirred
}

// eventsUID is the UID the pod's Events name (see eventUID); uid is the
// pod's own.
func (s *podState) eventsUID(uid types.UID) types.UID {
	if s.eventUID == "" {
		return uid
	}
	return s.eventUID
}

// inQuietTail reports whether the pod became quiet less than quietTail ago:
// a window it has stays open that long (none opens for it).
func (s *podState) inQuietTail(now time.Time) bool {
	return s.goneAt.IsZero() && !s.quietSince.IsZero() && now.Sub(s.quietSince) <= quietTail
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
	if cfg.EventTTL == 0 {
		cfg.EventTTL = DefaultEventTTL
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	w := &Watcher{
		cfg:       cfg,
		log:       cfg.Logger.With("component", "k8s-watch", "node", cfg.NodeName),
		clock:     cfg.Clock,
		poke:      make(chan struct{}, 1),
		sweepPoke: make(chan struct{}, 1),
		pods:      make(map[types.UID]*podState),
		windows:   make(map[types.UID]*eventWindow),
	}

	client := cfg.Client
	podSel := fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	podLW := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = podSel
			obj, err := client.ListPods(ctx, metav1.NamespaceAll, o)
			w.observe(ctx, srcPods, err)
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = podSel
			wi, err := client.WatchPods(ctx, metav1.NamespaceAll, o)
			w.observe(ctx, srcPods, err)
			return wi, err
		},
	}
	// client-go >= 0.35 lists by a streaming watch (WatchListClient) where
	// the client supports it; the wrapper keeps the client's say (fake
	// clientsets do not), which a bare ListWatch would hide.
	w.podInf = cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(podLW, cfg.Client), &corev1.Pod{}, cache.SharedIndexInformerOptions{
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

// Run watches until ctx is done and returns ctx.Err() once every goroutine
// it started has exited. Sends to out block (until ctx is done): the caller
// must drain out.
func (w *Watcher) Run(ctx context.Context, out chan<- fact.Input) error {
	if out == nil {
		return errors.New("watcher: nil output channel")
	}
	if !w.running.CompareAndSwap(false, true) {
		return errors.New("watcher: Run called more than once")
	}
	w.ctx, w.out = ctx, out

	var wg sync.WaitGroup
	wg.Go(func() { w.podInf.RunWithContext(ctx) })
	wg.Go(func() { w.sweepLoop(ctx) })
	if !w.cfg.NoEndpointSlices {
		wg.Go(func() {
			// Slices speak of pods: list them after the pods.
			if w.waitSynced(ctx, w.podReg) {
				w.runEndpointSlices(ctx)
			}
		})
	}
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
func (w *Watcher) send(in fact.Input) bool {
	in.Time = w.clock()
	return chans.Send(w.ctx, w.out, in)
}

// --- pods ---

// --- event windows ---

// --- API status ---
