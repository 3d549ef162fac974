// Readiness gates: a pod whose containers are all ready is still not Ready
// while a condition its spec's readinessGates name is not True (a load
// balancer's controller, say, has not registered it yet).

package correlate

import (
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// gatesNotTrue names the pod's readiness gates whose condition is not True
// (missing, False or Unknown), comma-separated; "" when none holds it.
func (p *pod) gatesNotTrue() string {
	if p.info == nil {
		return ""
	}
	var open []string
	for _, g := range p.info.ReadinessGates {
		if !conditionTrue(p.info.Conditions, g) {
			open = append(open, g)
		}
	}
	return strings.Join(open, ",")
}

func conditionTrue(cs []fact.Condition, typ string) bool {
	for _, cd := range cs {
		if cd.Type == typ {
			return cd.Status == "True"
		}
	}
	return false
}

// waitingGateReason is the waiting reason of a start-up held by readiness
// gates.
const waitingGateReason = "ReadinessGates"

// gateWait is the event on a Ready start-up that readiness gates held
// after its containers were ready: from ContainersReady, naming the gates
// that became True after it; nil when none did.
func (p *pod) gateWait() []span.SpanEvent {
	if p.info == nil || len(p.info.ReadinessGates) == 0 {
		return nil
	}
	cr, ok := p.condition("ContainersReady")
	if !ok {
		return nil
	}
	var held []string
	var last time.Time
	for _, g := range p.info.ReadinessGates {
		if t, ok := p.condition(g); ok && t.After(cr) {
			held = append(held, g)
			last = latest(last, t)
		}
	}
	if len(held) == 0 {
		return nil
	}
	gates := strings.Join(held, ",")
	return []span.SpanEvent{{Name: names.EventReadinessGatesWaited, Time: cr, Attrs: []span.Attr{
		span.String(names.WaitingReason, waitingGateReason),
		span.String(names.Message, "containers ready, waiting for readiness gate "+gates),
		span.Float(names.ReadinessGatesWaitSeconds, last.Sub(cr).Seconds()),
	}}}
}
