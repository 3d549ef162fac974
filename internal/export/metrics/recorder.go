package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/measure"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podchron/podchron/internal/names"
)

// Histogram buckets, in seconds.
var (
	// Pod startup (created → ready): sub-second for cached images on an idle
	// node, minutes for big image pulls or slow init containers.
	startupBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600}
	// Pod termination (deletion requested → gone): the default grace period
	// is 30 s, so 30 and 45 tell "used its whole grace period" apart.
	terminationBuckets = []float64{0.1, 0.5, 1, 2.5, 5, 10, 20, 30, 45, 60, 120, 300, 600}
	// Container stop (SIGTERM → exit): well-behaved processes exit in
	// milliseconds; the tail is the grace period.
	stopBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}
	// A readiness episode (Ready lost → regained): a probe's failure
	// threshold times its period (3 × 10 s by default) to a dependency's
	// outage of an hour.
	notReadyBuckets = []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600}
	// One CNI plugin run: 1 ms … 60 s.
	cniBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
)

// Limits caps the distinct values of the Recorder's free-form labels. Values
// past a cap are recorded as "other" and counted in
// podchron_label_values_folded_total{label}. Zero fields take the defaults.
type Limits struct {
	// Namespaces is the number of distinct namespaces (default 100). Each
	// one costs up to ~34 series per owner kind it runs (startup and
	// termination histograms) plus ~50 (container stops, exits, OOM kills,
	// overruns, stuck pods). Those that alerts compute increase() over are
	// created at zero as soon as a pod of the namespace is seen (PodSeen).
	Namespaces int
	// OwnerKinds is the number of owner kinds beyond the built-in ones
	// (ReplicaSet, StatefulSet, DaemonSet, Job, ReplicationController, Node,
	// none), for custom controllers (default 8).
	OwnerKinds int
	// CNIPlugins is the number of distinct CNI plugins (default 16).
	CNIPlugins int
	// Values caps each remaining free-form label: exit cause, CNI result and
	// correlation miss reason (default 32), beyond the values created at
	// zero (zeroExitCauses, ok and error), which are always kept.
	Values int
}

// DefaultLimits are the limits NewRecorder uses for zero fields.
var DefaultLimits = Limits{Namespaces: 100, OwnerKinds: 8, CNIPlugins: 16, Values: 32}

func (l Limits) withDefaults() Limits {
	pick := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	return Limits{
		Namespaces: pick(l.Namespaces, DefaultLimits.Namespaces),
		OwnerKinds: pick(l.OwnerKinds, DefaultLimits.OwnerKinds),
		CNIPlugins: pick(l.CNIPlugins, DefaultLimits.CNIPlugins),
		Values:     pick(l.Values, DefaultLimits.Values),
	}
}

// Recorder turns the lifecycle model's measurements into Prometheus metrics.
// It implements measure.Observer and prometheus.Collector: register it on
// the daemon's registry. It is safe for concurrent use.
type Recorder struct {
	startup           *prometheus.HistogramVec
	startupPhase      *prometheus.HistogramVec
	termination       *prometheus.HistogramVec
	notReady          *prometheus.HistogramVec
	terminations      *prometheus.CounterVec
	containerStop     *prometheus.HistogramVec
	overruns          *prometheus.CounterVec
	endpointsLate     *prometheus.CounterVec
	endpointsNotReady *prometheus.CounterVec
	exits             *prometheus.CounterVec
	oomKills          *prometheus.CounterVec
	oomMisreported    *prometheus.CounterVec
	throttled         *prometheus.CounterVec
	cni               *prometheus.HistogramVec
	signals           *prometheus.CounterVec
	misses            *prometheus.CounterVec
	stuck             *prometheus.GaugeVec
	folded            *prometheus.CounterVec
	negativeDuration  *prometheus.CounterVec

	namespace, ownerKind                     *labelLimiter
	plugin, command, result                  *labelLimiter
	cause, scope, signal, sender, missReason *labelLimiter
	kubeletReason                            *labelLimiter
	phase, longPole                          *labelLimiter

	stuckMu    sync.Mutex
	stuckCount map[string]int // by (folded) namespace label value
	// stuckPods lists stuck pods by UID (at most MaxStuckPods), with the
	// labels of their stuckInfo series.
	stuckPods map[string][]string
	stuckInfo *prometheus.GaugeVec
}

var _ measure.Observer = (*Recorder)(nil)

// zeroExitCauses are the container exit causes whose
// podchron_container_exits_total series PodSeen creates at zero in every
// namespace with a pod: the failures worth alerting on. The common causes
// (completed, killed_by_runtime) and the rare ones are created by their
// first exit.
var zeroExitCauses = []string{string(names.CauseError), string(names.CauseOOMKilled), string(names.CauseLivenessRestart), string(names.CauseEvicted)}

// CNI results: the series of both are created at zero with a plugin and
// command's first run.
const (
	cniOK    = "ok"
	cniError = "error"
)

// Names of the histograms in podchron_negative_durations_total{metric}.
const (
	histPodStartup      = "pod_startup"
	histPodStartupPhase = "pod_startup_phase"
	histPodTermination  = "pod_termination"
	histPodNotReady     = "pod_not_ready"
	histContainerStop   = "container_stop"
	histCNI             = "cni"
)

// NewRecorder makes a Recorder whose labels are capped by lim.
func NewRecorder(lim Limits) *Recorder {
	r := &Recorder{stuckCount: map[string]int{}, stuckPods: map[string][]string{}}
	r.newPodMetrics()
	r.newContainerMetrics()
	r.newNodeMetrics()
	r.newSelfMetrics()
	r.newLimiters(lim.withDefaults())
	for _, h := range []string{histPodStartup, histPodTermination, histPodNotReady, histContainerStop, histCNI} {
		r.negativeDuration.WithLabelValues(h)
	}
	// Every miss reason from 0, so the first of a kind is an increase.
	for _, m := range names.MissReasons {
		r.misses.WithLabelValues(string(m.Miss))
	}
	return r
}

// missReasons are the model's miss reasons (names.MissReasons), a closed set.
func missReasons() []string {
	out := make([]string, len(names.MissReasons))
	for i, m := range names.MissReasons {
		out[i] = string(m.Miss)
	}
	return out
}

// newPodMetrics makes the pods' metrics: start-up, termination, stuck pods.
func (r *Recorder) newPodMetrics() {
	r.startup = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podchron_pod_startup_duration_seconds",
		Help:    "Time from pod creation to the pod being ready, as podchron traced it; long_pole: the start-up's longest phase (as in podchron_pod_startup_phase_duration_seconds).",
		Buckets: startupBuckets,
	}, []string{names.LabelNamespace, names.LabelOwnerKind, names.LabelLongPole})
	r.startupPhase = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podchron_pod_startup_phase_duration_seconds",
		Help:    "Where start-ups' time went, by phase: scheduling, sandbox (with its network), image_pull (each pull), init (first init container start to last exit), start (each app container: created to running), readiness (last app container running to Ready).",
		Buckets: startupBuckets,
	}, []string{names.LabelNamespace, names.LabelPhase})
	r.termination = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podchron_pod_termination_duration_seconds",
		Help:    "Time from the pod's deletion being requested to the pod being gone.",
		Buckets: terminationBuckets,
	}, []string{names.LabelNamespace, names.LabelOwnerKind})
	r.notReady = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podchron_pod_not_ready_duration_seconds",
		Help:    "Readiness lost after the start-up, per episode: Ready lost to Ready regained (or to the pod's termination or end, when it came first); the trace's pod.not_ready span says why and when its Services withdrew it.",
		Buckets: notReadyBuckets,
	}, []string{names.LabelNamespace, names.LabelOwnerKind})
	r.terminations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_pod_terminations_total",
		Help: "Pod terminations traced to the end; overrun=\"true\" when a container outlived the grace period.",
	}, []string{names.LabelNamespace, names.LabelOwnerKind, names.LabelOverrun})
	r.stuck = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "podchron_pods_terminating_stuck",
		Help: "Pods currently stuck terminating (deletion requested, still not gone well past their grace period).",
	}, []string{names.LabelNamespace})
	r.stuckInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "podchron_pod_stuck_terminating_info",
		Help: "1 for each pod stuck terminating now, with its name, UID and trace ID (the trace has a pod.termination.stuck span already); at most " + strconv.Itoa(MaxStuckPods) + " pods, the per-namespace gauge counts them all.",
	}, []string{names.LabelNamespace, names.LabelPod, names.LabelUID, names.LabelTraceID})
}

// newContainerMetrics makes the containers' metrics: stops, grace period
// overruns, exits, OOM kills.
func (r *Recorder) newContainerMetrics() {
	r.containerStop = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podchron_container_stop_duration_seconds",
		Help:    "Time from SIGTERM to the container's exit; sigkill=\"true\" when it had to be SIGKILLed.",
		Buckets: stopBuckets,
	}, []string{names.LabelNamespace, names.LabelSigkill})
	r.overruns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_grace_period_overruns_total",
		Help: "Containers SIGKILLed because they were still running when the grace period ended.",
	}, []string{names.LabelNamespace})
	r.endpointsLate = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_endpoint_withdrawn_after_signal_total",
		Help: "Terminations whose pod got its stop signal 100 ms or more before a Service withdrew it from its EndpointSlices: requests still sent to it may have met an app already shutting down (add a preStop sleep).",
	}, []string{names.LabelNamespace})
	r.endpointsNotReady = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_endpoint_withdrawn_after_not_ready_total",
		Help: "Readiness episodes in which a Service withdrew the pod from its EndpointSlices 1 s or more after the pod lost Ready: requests still went to a pod failing its readiness probe (the EndpointSlice controller or the API server behind).",
	}, []string{names.LabelNamespace})
	r.exits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_container_exits_total",
		Help: "Container exits, by cause.",
	}, []string{names.LabelNamespace, names.LabelCause})
	r.oomKills = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_oom_kills_total",
		Help: "OOM kills of processes in pods, by the limit that ran out (the kernel's count): container, pod, node_allocatable (the kubepods cgroup), node (no cgroup limit: the node's memory), or unknown.",
	}, []string{names.LabelNamespace, names.LabelScope})
	r.oomMisreported = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_oom_kills_misreported_total",
		Help: "Containers whose init the kernel OOM-killed and whose end the kubelet reported with another reason than OOMKilled (its runtime missed the OOM event; containerd then says Error, exit 137), by that reason: OOM alerts on the kubelet's reason miss these.",
	}, []string{names.LabelNamespace, names.LabelReason})
	r.throttled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_signals_throttled_total",
		Help: "Signal records (sent or received by a pod's tasks) that the container cgroup's budget in the kernel refused: counted, not reported one by one (--signal-rate, --signal-burst).",
	}, []string{names.LabelNamespace})
}

// newNodeMetrics makes the metrics of what happens on the node beside the
// pods' own phases: CNI runs, signals, facts not attached to a pod.
func (r *Recorder) newNodeMetrics() {
	r.cni = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podchron_cni_duration_seconds",
		Help:    "Duration of one CNI plugin run, by plugin, CNI command and result.",
		Buckets: cniBuckets,
	}, []string{names.LabelPlugin, names.LabelCommand, names.LabelResult})
	r.signals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_signals_total",
		Help: "Signals sent to processes in pods, by signal and kind of sender (runtime, kubelet, in_pod, external, kernel).",
	}, []string{names.LabelSignal, names.LabelSenderKind})
	r.misses = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_correlation_misses_total",
		Help: "Facts podchron could not attach to a pod, by reason.",
	}, []string{names.LabelReason})
}

// newSelfMetrics makes the Recorder's metrics about itself: folded label
// values, negative durations left out.
func (r *Recorder) newSelfMetrics() {
	r.folded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_label_values_folded_total",
		Help: "Observations whose label value was recorded as \"other\" because the label reached its cap of distinct values.",
	}, []string{names.LabelLabel})
	r.negativeDuration = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podchron_negative_durations_total",
		Help: "Negative durations left out of a histogram (clock steps or mismatched timestamps), by histogram.",
	}, []string{names.LabelMetric})
}

// senderKinds are the values of podchron_signals_total{sender_kind}.
var senderKinds = []string{
	string(names.SenderRuntime), string(names.SenderKubelet), string(names.SenderInPod),
	string(names.SenderExternal), string(names.SenderKernel),
}

// newLimiters makes the limiters of the free-form labels, which count their
// folds in r.folded.
func (r *Recorder) newLimiters(lim Limits) {
	r.namespace = newLabelLimiter(names.LabelNamespace, "unknown", lim.Namespaces, nil, r.folded)
	r.ownerKind = newLabelLimiter(names.LabelOwnerKind, "none", lim.OwnerKinds,
		[]string{"ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController", "Node", "none"}, r.folded)
	r.plugin = newLabelLimiter(names.LabelPlugin, "unknown", lim.CNIPlugins, nil, r.folded)
	r.command = newLabelLimiter(names.LabelCommand, "unknown", 2,
		[]string{"ADD", "DEL", "CHECK", "VERSION", "GC", "STATUS"}, r.folded)
	r.result = newLabelLimiter(names.LabelResult, "unknown", lim.Values, []string{cniOK, cniError}, r.folded)
	r.cause = newLabelLimiter(names.LabelCause, "unknown", lim.Values, zeroExitCauses, r.folded)
	r.phase = newLabelLimiter(names.LabelPhase, "unknown", len(names.StartupPhases), names.StartupPhases, r.folded)
	r.longPole = newLabelLimiter(names.LabelLongPole, "unknown", len(names.StartupPhases), names.StartupPhases, r.folded)
	r.scope = newLabelLimiter(names.LabelScope, names.OOMScopeUnknown, len(names.OOMScopes), names.OOMScopes, r.folded)
	// Linux has 64 signals; names or numbers, a few more is already a bug.
	r.signal = newLabelLimiter(names.LabelSignal, "unknown", 72, nil, r.folded)
	r.sender = newLabelLimiter(names.LabelSenderKind, "unknown", 4, senderKinds, r.folded)
	r.missReason = newLabelLimiter(names.LabelReason, "unknown", lim.Values, missReasons(), r.folded)
	r.kubeletReason = newLabelLimiter(names.LabelReason, "unknown", lim.Values, []string{cri.ReasonError}, r.folded)
}

func (r *Recorder) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		r.startup, r.startupPhase, r.termination, r.notReady, r.terminations, r.containerStop, r.overruns, r.endpointsLate, r.endpointsNotReady,
		r.exits, r.oomKills, r.oomMisreported, r.throttled, r.cni, r.signals, r.misses, r.stuck, r.stuckInfo, r.folded,
		r.negativeDuration,
	}
}

// Describe implements prometheus.Collector.
func (r *Recorder) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range r.collectors() {
		c.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (r *Recorder) Collect(ch chan<- prometheus.Metric) {
	for _, c := range r.collectors() {
		c.Collect(ch)
	}
}

// observe records d in h's series for labels unless d is negative, which
// only a clock step or a mismatched pair of timestamps produces: it would
// corrupt the sum. The series is not created for a dropped observation.
func (r *Recorder) observe(h *prometheus.HistogramVec, metric string, d time.Duration, labels ...string) {
	r.observeTrace(h, metric, d, "", labels...)
}

// observeTrace observes d with the trace ID as the bucket's exemplar
// (OpenMetrics exposition), so a slow bucket leads to a trace.
func (r *Recorder) observeTrace(h *prometheus.HistogramVec, metric string, d time.Duration, traceID string, labels ...string) {
	if d < 0 {
		r.negativeDuration.WithLabelValues(metric).Inc()
		return
	}
	o := h.WithLabelValues(labels...)
	if eo, ok := o.(prometheus.ExemplarObserver); ok && traceID != "" {
		eo.ObserveWithExemplar(d.Seconds(), prometheus.Labels{names.LabelTraceID: traceID})
		return
	}
	o.Observe(d.Seconds())
}

// PodSeen implements measure.Observer. It creates, at zero, the series of
// the pod's namespace that alerts compute increase() over: a counter series
// that first appears at 1 has no earlier sample, so increase() never sees
// its first event. Only labels already bounded by the limiters are used, and
// the values past a cap fold into "other" without counting as folded.
func (r *Recorder) PodSeen(namespace, ownerKind string) {
	ns, kind := r.namespace.zeroValue(namespace), r.ownerKind.zeroValue(ownerKind)
	r.overruns.WithLabelValues(ns)
	r.endpointsLate.WithLabelValues(ns)
	r.endpointsNotReady.WithLabelValues(ns)
	r.throttled.WithLabelValues(ns)
	for _, scope := range names.OOMScopes {
		if scope == names.OOMScopeUnknown {
			continue
		}
		r.oomKills.WithLabelValues(ns, r.scope.zeroValue(scope))
	}
	for _, overrun := range []bool{false, true} {
		r.terminations.WithLabelValues(ns, kind, boolLabel(overrun))
	}
	for _, cause := range zeroExitCauses {
		r.exits.WithLabelValues(ns, r.cause.zeroValue(cause))
	}
	r.oomMisreported.WithLabelValues(ns, r.kubeletReason.zeroValue(cri.ReasonError))
	r.stuckMu.Lock()
	defer r.stuckMu.Unlock()
	if _, ok := r.stuckCount[ns]; !ok {
		// Only when the namespace has no count yet: the gauge of a namespace
		// with stuck pods must keep its value.
		r.stuckCount[ns] = 0
		r.stuck.WithLabelValues(ns).Set(0)
	}
}

// PodStartup implements measure.Observer.
func (r *Recorder) PodStartup(namespace, ownerKind, longPole string, d time.Duration, traceID string) {
	r.observeTrace(r.startup, histPodStartup, d, traceID, r.namespace.value(namespace), r.ownerKind.value(ownerKind), r.longPole.value(longPole))
}

// PodStartupPhase implements measure.Observer.
func (r *Recorder) PodStartupPhase(namespace, phase string, d time.Duration, traceID string) {
	r.observeTrace(r.startupPhase, histPodStartupPhase, d, traceID, r.namespace.value(namespace), r.phase.value(phase))
}

// PodTermination implements measure.Observer. Every termination is
// counted; only non-negative durations are observed.
func (r *Recorder) PodTermination(namespace, ownerKind string, d time.Duration, overrun bool, traceID string) {
	ns, kind := r.namespace.value(namespace), r.ownerKind.value(ownerKind)
	r.terminations.WithLabelValues(ns, kind, boolLabel(overrun)).Inc()
	r.observeTrace(r.termination, histPodTermination, d, traceID, ns, kind)
}

// PodNotReady implements measure.Observer.
func (r *Recorder) PodNotReady(namespace, ownerKind string, d time.Duration, traceID string) {
	r.observeTrace(r.notReady, histPodNotReady, d, traceID, r.namespace.value(namespace), r.ownerKind.value(ownerKind))
}

// ContainerStop implements measure.Observer.
func (r *Recorder) ContainerStop(namespace string, d time.Duration, sigkill bool, traceID string) {
	r.observeTrace(r.containerStop, histContainerStop, d, traceID, r.namespace.value(namespace), boolLabel(sigkill))
}

// GracePeriodOverrun implements measure.Observer.
func (r *Recorder) GracePeriodOverrun(namespace string) {
	r.overruns.WithLabelValues(r.namespace.value(namespace)).Inc()
}

// EndpointWithdrawnLate implements measure.Observer.
func (r *Recorder) EndpointWithdrawnLate(namespace string) {
	r.endpointsLate.WithLabelValues(r.namespace.value(namespace)).Inc()
}

// EndpointWithdrawnAfterNotReady implements measure.Observer.
func (r *Recorder) EndpointWithdrawnAfterNotReady(namespace string) {
	r.endpointsNotReady.WithLabelValues(r.namespace.value(namespace)).Inc()
}

// ContainerExit implements measure.Observer.
func (r *Recorder) ContainerExit(namespace, cause string) {
	r.exits.WithLabelValues(r.namespace.value(namespace), r.cause.value(cause)).Inc()
}

// OOMKill implements measure.Observer.
func (r *Recorder) OOMKill(namespace, scope string) {
	r.oomKills.WithLabelValues(r.namespace.value(namespace), r.scope.value(scope)).Inc()
}

// OOMKillMisreported implements measure.Observer.
func (r *Recorder) OOMKillMisreported(namespace, reason string) {
	r.oomMisreported.WithLabelValues(r.namespace.value(namespace), r.kubeletReason.value(reason)).Inc()
}

// SignalsThrottled implements measure.Observer.
func (r *Recorder) SignalsThrottled(namespace string, n uint64) {
	r.throttled.WithLabelValues(r.namespace.value(namespace)).Add(float64(n))
}

// CNICall implements measure.Observer. The plugin and command's ok and
// error series are both created with their first run, so that the first
// failure after successful runs is an increase from zero (a failing first
// run still shows only as a new series).
func (r *Recorder) CNICall(plugin, command, result string, d time.Duration) {
	p, cmd := r.plugin.value(plugin), r.command.value(command)
	r.cni.WithLabelValues(p, cmd, cniOK)
	r.cni.WithLabelValues(p, cmd, cniError)
	r.observe(r.cni, histCNI, d, p, cmd, r.result.value(result))
}

// Signal implements measure.Observer.
func (r *Recorder) Signal(signal, senderKind string) {
	r.signals.WithLabelValues(r.signal.value(signal), r.sender.value(senderKind)).Inc()
}

// CorrelationMiss implements measure.Observer.
func (r *Recorder) CorrelationMiss(reason string) {
	r.misses.WithLabelValues(r.missReason.value(reason)).Inc()
}

// MaxStuckPods bounds the stuck pods named one by one in
// podchron_pod_stuck_terminating_info.
const MaxStuckPods = 20

// StuckTerminating implements measure.Observer. The gauge counts entries
// minus exits per namespace and never goes below zero: an exit without a
// matching entry (say, podchron restarted while the pod was stuck) is ignored.
//
// Each stuck pod also gets a podchron_pod_stuck_terminating_info series that
// leads to it (name, UID, trace ID), for at most MaxStuckPods pods at once:
// the alert's way to the pod, at a bounded cost.
func (r *Recorder) StuckTerminating(namespace string, pod measure.PodRef, stuck bool) {
	ns := r.namespace.value(namespace)
	r.stuckMu.Lock()
	defer r.stuckMu.Unlock()
	if labels, listed := r.stuckPods[pod.UID]; listed && !stuck {
		r.stuckInfo.DeleteLabelValues(labels...)
		delete(r.stuckPods, pod.UID)
	} else if stuck && !listed && pod.UID != "" && len(r.stuckPods) < MaxStuckPods {
		labels := []string{ns, pod.Name, pod.UID, pod.TraceID}
		r.stuckPods[pod.UID] = labels
		r.stuckInfo.WithLabelValues(labels...).Set(1)
	}
	n := r.stuckCount[ns]
	switch {
	case stuck:
		n++
	case n > 0:
		n--
	default:
		return
	}
	r.stuckCount[ns] = n
	r.stuck.WithLabelValues(ns).Set(float64(n))
}
