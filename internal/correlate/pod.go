package correlate

import (
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"
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

func (p *pod) spanID(key string) span.SpanID { return span.SpanIDFor(p.trace, key) }

// image is a container's image as the pod spec names it.
func (p *pod) image(container string) string {
	if spec, _ := p.spec(container); spec != nil {
		return spec.Image
	}
	return ""
}
