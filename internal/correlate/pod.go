package correlate

import (
	"sort"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// pod is everything known about one pod (by UID).
type pod struct {
	uid   string
	trace span.TraceID
	info  *fact.PodInfo // latest from the API server, nil without one

	firstSeen    time.Time
	observedFrom time.Time // set when the tracer started after the pod
	eventsLost   uint64

	// seenNS and seenKind are what the observer was last told in PodSeen.
	seenNS, seenKind string
	// filteredNS and filteredIn cache the namespace filter's verdict for
	// the namespace last seen (filter.go): a signal flood asks per event.
	filteredNS string
	filteredIn bool

	sandboxID      string
	sandboxCreated time.Time // the runtime's time, or the pod cgroup's mkdir
	sandboxReady   time.Time
	sandboxStopped time.Time
	sandboxRemoved time.Time
	cgroupRemoved  time.Time

	cniAdd []*cniRun
	cniDel []*cniRun

	containers []*container // in order of appearance
	pulls      map[string]*pull
	events     map[string]int32 // k8s event UID -> count seen (dedupe)
	k8sEvents  []*fact.K8sEvent // kept for causes (Killing, Unhealthy, Evicted)
	rootEvents []span.SpanEvent

	startupDone   bool
	startupSettle time.Time
	// readySeen is when the API server's Ready=True was first seen;
	// readyAt the ready time the start-up span ends at. readyEvidence holds
	// the kernel times of what makes a pod ready (a passing readiness or
	// startup probe, a postStart hook's end, an app container's exec):
	// the API's condition time has whole seconds, the kernel's do not.
	readySeen     time.Time
	readyAt       time.Time
	readyEvidence []time.Time
	// sightings: when the tracer first saw API facts (sharpenAPITimes).
	sightings   map[string]time.Time
	deletedAt   time.Time // deletion requested (deletionTimestamp - grace)
	deadline    time.Time // deletionTimestamp: the grace period ends
	grace       time.Duration
	terminating time.Time // termination began (deletion, or first stop signal)
	forced      bool      // grace period 0
	stuck       bool
	overrun     bool
	gaveUpAt    time.Time // the start-up ended without Ready (see startup.go)
	// Sandboxes recreated after the start-up, and CNI ADDs waiting for the
	// runtime to name their sandbox (sandbox.go).
	resandboxes []*resandbox
	// lastWaiting: each container's last telling waiting reason (startup.go).
	lastWaiting map[string]fact.Waiting
	pendingCNI  []*cniRun
	// terminationReason: why a termination without an API deletion began
	// (DeadlineExceeded, Evicted, Completed, ...).
	terminationReason string
	lateReady         bool      // Ready came after gaveUpAt (noted on the root)
	readyAt0          time.Time // the Ready condition's time when first seen
	rootFolded        int       // root events over the cap
	lossEvent         int       // index of the current loss episode's root event, -1 if none
	lossLast          time.Time // the last loss report
	lossEpisode       uint64    // events lost in the current episode
	goneAt            time.Time
	apiGoneAt         time.Time // the object was deleted while containers still ran
	emitted           map[string]bool
	finished          bool
	finishing         bool
}

type pull struct {
	container  string
	start, end time.Time
	message    string
	// A failed pull: the kubelet's reason (ErrImagePull, ImagePullBackOff,
	// ErrImageNeverPull, ...), its message, and the last failure's time.
	reason, failure string
	failedAt        time.Time
}

// pod returns the pod with this UID, creating it, or nil when the pod's
// trace already ended (a late fact, counted as a miss).
func (c *Correlator) pod(uid string, at time.Time) *pod {
	if p, ok := c.pods[uid]; ok {
		return p
	}
	if _, ok := c.gone[uid]; ok {
		c.miss("fact_after_pod_gone")
		return nil
	}
	p := &pod{
		uid:       uid,
		trace:     span.TraceIDForPod(uid),
		firstSeen: at,
		pulls:     map[string]*pull{},
		events:    map[string]int32{},
		emitted:   map[string]bool{},
		sightings: map[string]time.Time{},
	}
	p.lossEvent = -1
	c.pods[uid] = p
	c.releaseEvents(uid)
	return p
}

func (p *pod) namespace() string {
	if p.info != nil {
		return p.info.Namespace
	}
	for _, r := range p.cniAdd {
		if r.podNamespace != "" {
			return r.podNamespace
		}
	}
	for _, ct := range p.containers {
		if ct.podNamespace != "" {
			return ct.podNamespace
		}
	}
	return ""
}

// podSeen tells the observer about the pod once its namespace is known, and
// again only if the namespace or the owner kind changed since (the owner
// kind is "none" until the API server's view arrives). Call it wherever a
// fact can make the namespace or owner kind known.
func (c *Correlator) podSeen(p *pod) {
	ns := p.namespace()
	if ns == "" {
		return
	}
	kind := p.ownerKind()
	if ns == p.seenNS && kind == p.seenKind {
		return
	}
	p.seenNS, p.seenKind = ns, kind
	c.observer(p).PodSeen(ns, kind)
}

func (p *pod) name() string {
	if p.info != nil {
		return p.info.Name
	}
	for _, ct := range p.containers {
		if ct.podName != "" {
			return ct.podName
		}
	}
	for _, r := range p.cniAdd {
		if r.podName != "" {
			return r.podName
		}
	}
	return ""
}

func (p *pod) ownerKind() string {
	if p.info == nil || p.info.OwnerKind == "" {
		return "none"
	}
	return p.info.OwnerKind
}

// spec returns the container's spec from the API, if known.
func (p *pod) spec(name string) (*fact.ContainerSpec, bool) {
	if p.info == nil {
		return nil, false
	}
	for i := range p.info.InitContainers {
		if p.info.InitContainers[i].Name == name {
			return &p.info.InitContainers[i], true
		}
	}
	for i := range p.info.Containers {
		if p.info.Containers[i].Name == name {
			return &p.info.Containers[i], false
		}
	}
	return nil, false
}

// condition returns when a condition last became True.
// containerStarted reports the API's ContainerStatus.Started of a
// container (its startup probe passed, or it has none).
func (p *pod) containerStarted(name string) bool {
	if p.info == nil {
		return false
	}
	for _, st := range p.info.Statuses {
		if st.Name == name && st.Started != nil {
			return *st.Started
		}
	}
	return false
}

func (p *pod) condition(typ string) (time.Time, bool) {
	if p.info == nil {
		return time.Time{}, false
	}
	for _, cd := range p.info.Conditions {
		if cd.Type == typ && cd.Status == "True" {
			return cd.LastTransitionTime, true
		}
	}
	return time.Time{}, false
}

// goingReason tells a pod the API says is going away without a deletion:
// a terminal phase with a reason (DeadlineExceeded, Evicted, Shutdown, ...)
// or a DisruptionTarget condition.
func (p *pod) goingReason() (string, bool) {
	if p.info == nil {
		return "", false
	}
	if reason, _, ok := p.disruption(); ok {
		return reason, true
	}
	if p.info.Reason != "" && (p.info.Phase == "Failed" || p.info.Phase == "Succeeded" || p.info.Phase == "") {
		return p.info.Reason, true
	}
	return "", false
}

// mainContainersDone: every regular (non-init, non-sidecar) container of
// the pod has exited.
func (p *pod) mainContainersDone() bool {
	n := 0
	for _, ct := range p.containers {
		if ct.sandbox || ct.init || ct.name == "" {
			continue
		}
		if spec, isInit := p.spec(ct.name); isInit || spec != nil && spec.Sidecar {
			continue
		}
		n++
		if !ct.exited {
			return false
		}
	}
	return n > 0
}

// resource is the OTel resource of every span in the pod's trace.
func (c *Correlator) resource(p *pod) []span.Attr {
	r := []span.Attr{span.String(names.K8sPodUID, p.uid)}
	if p.info != nil && p.info.ConfigUID != "" && p.info.UID != p.uid {
		// A static pod: its own UID above, its mirror object's here.
		r = append(r, span.String(names.PodMirrorUID, p.info.UID))
	}
	if n := p.name(); n != "" {
		r = append(r, span.String(names.K8sPodName, n))
	}
	if ns := p.namespace(); ns != "" {
		r = append(r, span.String(names.K8sNamespaceName, ns))
	}
	if c.cfg.NodeName != "" {
		r = append(r, span.String(names.K8sNodeName, c.cfg.NodeName))
	}
	if c.cfg.ClusterName != "" {
		r = append(r, span.String(names.K8sClusterName, c.cfg.ClusterName))
	}
	if p.info != nil {
		r = append(r, ownerResource(p.info)...)
		for _, k := range sortedKeys(p.info.Labels) {
			r = append(r, span.String(names.K8sPodLabelPrefix+k, p.info.Labels[k]))
		}
	}
	return r
}

// ownerResource names the pod's controller with the semantic conventions'
// keys: k8s.replicaset.*, and k8s.deployment.name when the ReplicaSet's
// name is a Deployment's plus the pod's template hash; k8s.statefulset.*,
// k8s.daemonset.*, k8s.job.*. (A Job's CronJob is not in the pod's object.)
func ownerResource(info *fact.PodInfo) []span.Attr {
	var r []span.Attr
	add := func(nameKey, uidKey string) {
		r = append(r, span.String(nameKey, info.OwnerName))
		if info.OwnerUID != "" && uidKey != "" {
			r = append(r, span.String(uidKey, info.OwnerUID))
		}
	}
	switch info.OwnerKind {
	case "ReplicaSet":
		add(names.K8sReplicaSetName, names.K8sReplicaSetUID)
		if h := info.TemplateHash; h != "" && strings.HasSuffix(info.OwnerName, "-"+h) {
			r = append(r, span.String(names.K8sDeploymentName, strings.TrimSuffix(info.OwnerName, "-"+h)))
		}
	case "StatefulSet":
		add(names.K8sStatefulSetName, names.K8sStatefulSetUID)
	case "DaemonSet":
		add(names.K8sDaemonSetName, names.K8sDaemonSetUID)
	case "Job":
		add(names.K8sJobName, names.K8sJobUID)
	}
	return r
}

func (p *pod) spanID(key string) span.SpanID { return span.SpanIDFor(p.trace, key) }

// emit sends a span once.
func (c *Correlator) emit(p *pod, s span.Span) {
	key := s.SpanID.String()
	if p.emitted[key] {
		return
	}
	p.emitted[key] = true
	if !c.traced(p) {
		c.stats.SpansFiltered++
		return
	}
	s.TraceID = p.trace
	s.Resource = c.resource(p)
	if p.eventsLost > 0 {
		s.Attrs = append(s.Attrs, span.Int(names.EventsLost, int64(p.eventsLost)))
	}
	if d := c.degradedDuring(s.Start, s.End); d != "" {
		s.Attrs = append(s.Attrs, span.String(names.Degraded, d))
	}
	if !p.observedFrom.IsZero() {
		s.Attrs = append(s.Attrs, span.String(names.ObservedFrom, p.observedFrom.UTC().Format(time.RFC3339Nano)))
	}
	if s.End.Before(s.Start) {
		s.End = s.Start
	}
	if s.Status == span.StatusError {
		s.Attrs = append(s.Attrs, span.String(names.ErrorType, errorType(s)))
	}
	s.Attrs = c.commandArgs(s.Attrs)
	c.stats.SpansEmitted++
	c.cfg.Sink.Emit(s)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// earliest returns the earliest non-zero time.
func earliest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if !t.IsZero() && (out.IsZero() || t.Before(out)) {
			out = t
		}
	}
	return out
}

func latest(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// errorType is an error span's error.type: a low-cardinality class, the
// span's own cause or reason when it has one (an exit cause, a start-up
// outcome, a waiting reason, a probe result), else "_OTHER" (semconv's
// fallback).
func errorType(s span.Span) string {
	for _, k := range []string{names.ExitCause, names.StartupOutcome, names.WaitingReason, names.ProbeResult} {
		if v, ok := s.Attr(k).(string); ok && v != "" {
			return v
		}
	}
	if s.Name == names.SpanPodTermination || s.Name == names.SpanContainerStop {
		if v, ok := s.Attr(names.GracePeriodOverrun).(bool); ok && v {
			return "grace_period_overrun"
		}
	}
	return "_OTHER"
}

// commandArgs applies Config.Args to a span's command line: the one place
// argv leaves the model.
func (c *Correlator) commandArgs(attrs []span.Attr) []span.Attr {
	for i := 0; i < len(attrs); i++ {
		if attrs[i].Key != names.ProcessCommandArgs {
			continue
		}
		args, _ := attrs[i].Value.([]string)
		if kept := c.cfg.Args.Args(args); len(kept) > 0 {
			attrs[i] = span.Strings(names.ProcessCommandArgs, kept...)
		} else {
			attrs = append(attrs[:i], attrs[i+1:]...)
			i--
		}
	}
	return attrs
}
