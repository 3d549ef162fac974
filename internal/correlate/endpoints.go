// Services' endpoints (EndpointSlices): when each Service first listed the
// pod ready (a root event, podchron.endpoint.ready: from then on it was
// sent traffic), and when, once its termination began, each withdrew it
// (podchron.endpoint.withdrawn on pod.termination: from then on new
// connections go elsewhere, once kube-proxy or the load balancer has
// followed). A pod that got its stop signal before a Service withdrew it
// may have refused requests still sent to it: the termination's verdict
// says so (verdict.go, endpointWords), the reason preStop sleep hooks
// exist. A Service's withdrawal during a readiness episode is on the
// episode's pod.not_ready (episodeWithdrawals): it stopped sending the pod
// traffic then.
//
// Times are when the tracer saw the slices change (the API server's watch
// delivers within milliseconds); a state first found by a list (the
// tracer's start, a relist) is an upper bound and is marked so. A Service
// has a slice per address family (and more past 100 endpoints): the pod is
// listed ready by a Service while any of its slices says so, so an
// endpoint moved between slices is no withdrawal.

package correlate

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// maxEndpointServices bounds the Services followed per pod: a tenant can
// select one pod with any number of Services. Changes from the others are
// counted on the pod (the miss endpoint_services_capped).
const maxEndpointServices = 16

// withdrawalSlack: a withdrawal this much before the termination's start
// (the API server's clock, against the tracer's sighting) is still the
// termination's.
const withdrawalSlack = time.Second

// podEndpoints: what the Services' EndpointSlices say of the pod.
type podEndpoints struct {
	slices   map[string]fact.EndpointChange // by slice name, the latest
	services map[string]*serviceEndpoint    // by Service name
}

// serviceEndpoint is the pod in one Service.
type serviceEndpoint struct {
	ready     bool      // listed ready in one of its slices now
	everReady bool      // listed ready once (its first ready is on the root when seen as it happened)
	withdrawn time.Time // when it last stopped listing the pod ready (zero if it never did)
	// How it was withdrawn: the endpoint's conditions then (terminating,
	// serving) or its removal; initial: found withdrawn by a list.
	removed, serving, terminating, initial bool
}

// endpointChange takes an EndpointSlice's change for one of the node's
// pods.
func (c *Correlator) endpointChange(e *fact.EndpointChange) {
	p, ok := c.pods[e.PodUID]
	if !ok {
		if !c.isEnded(e.PodUID, names.MissEndpointAfterTraceEnd) {
			c.miss(names.MissEndpointUnknownPod)
		}
		return
	}
	if ns := p.namespace(); ns != "" && e.Namespace != ns {
		// A slice lives in a namespace, and whoever may write slices
		// there can name any pod's UID: only the pod's own namespace's
		// slices speak for it (the endpoints controller's always do).
		c.miss(names.MissEndpointNamespaceMismatch)
		return
	}
	if p.slices == nil {
		p.slices, p.services = map[string]fact.EndpointChange{}, map[string]*serviceEndpoint{}
	}
	svc := p.services[e.Service]
	if svc == nil {
		if !e.Listed {
			return // a Service never seen listing it
		}
		if len(p.services) >= maxEndpointServices {
			c.missOn(p, names.MissEndpointServicesCapped, "")
			return
		}
		svc = &serviceEndpoint{}
		p.services[e.Service] = svc
	}
	if e.Listed {
		p.slices[e.Slice] = *e
	} else {
		delete(p.slices, e.Slice)
	}
	ready := false
	for _, s := range p.slices {
		ready = ready || s.Service == e.Service && s.Ready
	}
	switch {
	case ready:
		if svc.ready {
			return
		}
		if !svc.everReady && !e.Initial {
			p.addRootEvent(span.SpanEvent{Name: names.EventEndpointReady, Time: c.now, Attrs: []span.Attr{
				span.String(names.K8sServiceName, e.Service)}})
		}
		// The last withdrawal stays known (a readiness episode's span,
		// emitted when Ready comes back, may be emitted after this).
		svc.ready, svc.everReady = true, true
	case svc.ready || e.Initial && svc.withdrawn.IsZero() && (e.Terminating || !p.notReadySince.IsZero()):
		// Withdrawn now; or found withdrawn by a list (a tracer started
		// mid-termination, or during a readiness episode it resumed),
		// at or before now.
		svc.ready = false
		svc.withdrawn, svc.initial = c.now, e.Initial
		svc.removed, svc.serving, svc.terminating = !e.Listed, e.Listed && e.Serving, e.Listed && e.Terminating
	}
}

// withdrawals are the Services that withdrew the pod since its termination
// began, by name.
func (p *pod) withdrawals() []string {
	if p.terminating.IsZero() {
		return nil
	}
	// Only those still out: a Service that listed it ready again since
	// (its withdrawal an episode's, readiness.go) sends it traffic.
	return slices.DeleteFunc(p.withdrawnIn(p.terminating, time.Time{}), func(name string) bool { return p.services[name].ready })
}

// withdrawnIn are the Services whose latest withdrawal of the pod came
// from withdrawalSlack before from to to (no bound when zero), by name.
func (p *pod) withdrawnIn(from, to time.Time) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(p.services)) {
		w := p.services[name].withdrawn
		if !w.IsZero() && !w.Before(from.Add(-withdrawalSlack)) && (to.IsZero() || !w.After(to)) {
			out = append(out, name)
		}
	}
	return out
}

// withdrawalEvents are the named Services' withdrawal events.
func (p *pod) withdrawalEvents(services []string) []span.SpanEvent {
	var out []span.SpanEvent
	for _, name := range services {
		s := p.services[name]
		attrs := []span.Attr{span.String(names.K8sServiceName, name), span.Bool(names.EndpointRemoved, s.removed)}
		if !s.removed {
			attrs = append(attrs, span.Bool(names.EndpointServing, s.serving), span.Bool(names.EndpointTerminating, s.terminating))
		}
		if s.initial {
			attrs = append(attrs, span.Bool(names.EndpointListed, true))
		}
		out = append(out, span.SpanEvent{Name: names.EventEndpointWithdrawn, Time: s.withdrawn, Attrs: attrs})
	}
	return out
}

// latestSighted is the latest withdrawal among the named Services' seen as
// it happened (not first found by a list), and its Service.
func (p *pod) latestSighted(services []string) (string, time.Time) {
	var name string
	var at time.Time
	for _, n := range services {
		if s := p.services[n]; !s.initial && s.withdrawn.After(at) {
			name, at = n, s.withdrawn
		}
	}
	return name, at
}

// episodeLateWorth: a Service that withdrew the pod this long after it
// lost Ready sent traffic to a pod failing its readiness probe all along;
// the episode's message says so. (The loss is the API's whole second
// unless this instance saw it happen.)
const episodeLateWorth = time.Second

// episodeWithdrawals are the withdrawals of a readiness episode from start
// to end (not the termination's, which pod.termination has), and when the
// latest came episodeLateWorth or more after the loss was seen (lost),
// words saying so: "Service web withdrew it 2.0 s after it lost Ready".
func (p *pod) episodeWithdrawals(start, lost, end time.Time) ([]span.SpanEvent, string) {
	if !p.terminating.IsZero() {
		if t := p.terminating.Add(-withdrawalSlack - time.Nanosecond); t.Before(end) {
			end = t
		}
	}
	services := p.withdrawnIn(start, end)
	var words string
	if name, at := p.latestSighted(services); !at.IsZero() && at.Sub(lost) >= episodeLateWorth {
		words = fmt.Sprintf("Service %s withdrew it %s after it lost Ready", name, secs(at.Sub(lost)))
	}
	return p.withdrawalEvents(services), words
}
