package correlate

import (
	"slices"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// pod is everything known about one pod (by UID). What serves one phase is
// grouped, each group defined beside the phase that uses it.
type pod struct {
	uid   string
	trace span.TraceID
	info  *fact.PodInfo // latest from the API server, nil without one

	firstSeen    time.Time
	observedFrom time.Time // set when the tracer started after the pod

	// seenNS and seenKind are what the observer was last told in PodSeen.
	seenNS, seenKind string
	// sightings: when the tracer first saw API facts (sharpenAPITimes).
	sightings map[string]time.Time

	containers []*container // in order of appearance
	emitted    map[string]bool

	podFilter      // the namespace filter's cached verdict (filter.go)
	podEvents      // Kubernetes events and the root span's events (bounds.go)
	podLoss        // kernel losses (ingest_kernel.go)
	podSandbox     // the sandbox and its network (sandbox.go)
	podStartup     // the start-up (startup.go)
	podTermination // the termination (emit_termination.go)
	podHooks       // kubelet-run hooks and the grace they leave (hooks.go)
	podEnd         // the pod going and its trace ending (lifecycle.go)
	podAttempts    // finished attempts retired (attempts.go)
	podReadiness   // readiness lost and regained after the start-up (readiness.go)
	podRestartAll  // in-place restarts of the whole pod (restart_rules.go)
	podResize      // in-place resizes (resize.go)
	podEndpoints   // the Services' endpoints of the pod (endpoints.go)

	verdict podVerdict // what the phase verdicts said, for the root's (verdict.go)
}

// pod returns the pod with this UID, creating it, or nil when the pod's
// trace already ended (a late fact, counted as the miss late).
func (c *Correlator) pod(uid string, at time.Time, late names.Miss) *pod {
	if p, ok := c.pods[uid]; ok {
		return p
	}
	if c.isEnded(uid, late) || c.endedBeforeRestart(uid) {
		return nil
	}
	p := &pod{
		uid:        uid,
		trace:      span.TraceIDForPod(uid),
		firstSeen:  at,
		podStartup: podStartup{pulls: map[string]*pull{}},
		podEvents:  podEvents{events: map[string]int32{}},
		emitted:    map[string]bool{},
		sightings:  map[string]time.Time{},
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
// statuses are the API's container statuses of the pod, init containers
// first (a new slice).
func (p *pod) statuses() []fact.ContainerStatus {
	return slices.Concat(p.info.InitStatuses, p.info.Statuses)
}

// statusByID is the API's status of the (init or app) container with
// this ID, or nil.
func (p *pod) statusByID(id string) *fact.ContainerStatus {
	if p.info == nil || id == "" {
		return nil
	}
	for _, sts := range [][]fact.ContainerStatus{p.info.InitStatuses, p.info.Statuses} {
		for i := range sts {
			if sts[i].ContainerID == id {
				return &sts[i]
			}
		}
	}
	return nil
}

func (p *pod) image(container string) string {
	if spec, _ := p.spec(container); spec != nil {
		return spec.Image
	}
	return ""
}
