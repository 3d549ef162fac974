package correlate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"
)

// Bounded state. A pod can live for weeks and see a million signals, a
// probe every few seconds or hours of kernel losses: what the model keeps
// per pod and per container is capped, and what goes over a cap is counted
// (and said on the span) instead of kept. The caps also bound every span's
// events, so no OTLP message gets near a collector's 4 MiB limit.
const (
	// maxSignalRecs: signal records kept per container run; the first of
	// each (signal, sender kind, to the init or not) is always kept, since
	// causes and stops are decided on those.
	maxSignalRecs = 32
	// maxK8sEvents: the pod's latest Kubernetes events kept for decisions.
	maxK8sEvents = 128
	// maxEventUIDs: Event objects remembered to skip stale updates.
	maxEventUIDs = 512
	// maxRootEvents: events on the pod's root span.
	maxRootEvents = 256
	// maxProbeFails: failed-probe events on a container run.
	maxProbeFails = 32
	// maxSessionSpans: hook, probe and exec session spans per container run
	// and kind (a failing probe every 10 s for days is one story, not
	// 250 000 spans).
	maxSessionSpans = 32
	// maxReadyEvidence: the latest readiness evidence kept while the
	// start-up settles (only the last ones can be the moment of Ready).
	maxReadyEvidence = 16
	// lossEpisodeGap: loss reports closer than this are one loss episode,
	// one event on the root.
	lossEpisodeGap = 10 * time.Second
	// maxPendingEvents: Kubernetes events held for pods the model has not
	// seen yet (the pod's own watch can lag the events'), and for how long.
	maxPendingEvents = 1024
	pendingEventTTL  = 2 * time.Minute
	// maxKeptAttempts: finished attempts of one container name kept per
	// pod when the runtime has not removed them (attempts.go); the removed
	// ones go as soon as a later attempt started.
	maxKeptAttempts = 4
	// maxRetiredIDs: retired attempts' IDs remembered per pod, so the
	// runtime's late word on one is counted, not made an attempt anew.
	maxRetiredIDs = 16
	// maxNotReadySpans: pod.not_ready spans per pod (readiness lost after
	// the start-up); later episodes are root events (readiness.go).
	maxNotReadySpans = 32
)

// podEvents: the pod's Kubernetes events and its root span's events, each
// within its cap.
type podEvents struct {
	events     map[string]int32 // k8s event UID -> count seen (dedupe)
	k8sEvents  []*fact.K8sEvent // kept for causes (Killing, Unhealthy, Evicted)
	rootEvents []span.SpanEvent
	rootFolded int // root events over the cap
	// missEvents: the root's podchron.correlation_miss events by reason
	// and container (index in rootEvents, -1 over the cap), and how many
	// misses each tells.
	missEvents map[missKey]*missEvent
}

type missKey struct {
	reason    names.Miss
	container string
}

type missEvent struct {
	index int
	count int64
}

// addRootEvent puts an event on the pod's root span, within its cap.
func (p *pod) addRootEvent(ev span.SpanEvent) int {
	if len(p.rootEvents) >= maxRootEvents {
		p.rootFolded++
		return -1
	}
	p.rootEvents = append(p.rootEvents, ev)
	return len(p.rootEvents) - 1
}

// addReadyEvidence keeps the latest readiness evidence.
func (p *pod) addReadyEvidence(t time.Time) {
	p.readyEvidence = append(p.readyEvidence, t)
	if n := len(p.readyEvidence); n > maxReadyEvidence {
		p.readyEvidence = append(p.readyEvidence[:0], p.readyEvidence[n-maxReadyEvidence:]...)
	}
}

// addK8sEvent keeps an Event (the latest version of each object) among the
// pod's latest ones, in the order they were last updated.
func (p *pod) addK8sEvent(ev *fact.K8sEvent) {
	for i, old := range p.k8sEvents {
		if old.UID == ev.UID && ev.UID != "" {
			p.k8sEvents = append(p.k8sEvents[:i], p.k8sEvents[i+1:]...)
			break
		}
	}
	p.k8sEvents = append(p.k8sEvents, ev)
	if n := len(p.k8sEvents); n > maxK8sEvents {
		p.k8sEvents = append(p.k8sEvents[:0], p.k8sEvents[n-maxK8sEvents:]...)
	}
	if len(p.events) >= maxEventUIDs {
		p.events = map[string]int32{} // forget old objects' counts: at worst a stale update is taken again
	}
}

// signalKey groups signal records for folding.
type signalKey struct {
	sig    int
	kind   names.SenderKind
	toInit bool
}

// addSignal records a signal to the container, within the cap.
func (ct *container) addSignal(rec signalRec) {
	k := signalKey{int(rec.sig), rec.senderKind, rec.toInit}
	if len(ct.signals) < maxSignalRecs || !ct.signalKinds[k] {
		if ct.signalKinds == nil {
			ct.signalKinds = map[signalKey]bool{}
		}
		ct.signalKinds[k] = true
		ct.signals = append(ct.signals, rec)
		return
	}
	if ct.signalsFolded == nil {
		ct.signalsFolded = map[signalKey]int{}
	}
	ct.signalsFolded[k]++
}

// foldedSignals is the event that counts the signal records not kept.
func (ct *container) foldedSignals(at time.Time) (span.SpanEvent, int) {
	var total int
	var attrs []span.Attr
	for _, k := range sortedSignalKeys(ct.signalsFolded) {
		n := ct.signalsFolded[k]
		total += n
		name := fmt.Sprintf(names.EventSignalsFolded+".%s.%s", kernel.SignalName(sigNum(k.sig)), k.kind)
		if k.toInit {
			name += ".init"
		}
		attrs = append(attrs, span.Int(name, int64(n)))
	}
	return span.SpanEvent{Name: names.EventSignalsFolded, Time: at, Attrs: attrs}, total
}

func sortedSignalKeys(m map[signalKey]int) []signalKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b signalKey) int {
		if c := cmp.Compare(a.sig, b.sig); c != 0 {
			return c
		}
		if c := strings.Compare(string(a.kind), string(b.kind)); c != 0 {
			return c
		}
		return cmp.Compare(boolInt(a.toInit), boolInt(b.toInit))
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// addProbeFail records a failed probe (the kubelet's Unhealthy event).
func (ct *container) addProbeFail(ev span.SpanEvent) {
	if len(ct.probeFails) >= maxProbeFails {
		ct.probeFailsFolded++
		return
	}
	ct.probeFails = append(ct.probeFails, ev)
}

// sessionSpanAllowed counts a session span of a kind against its cap.
func (ct *container) sessionSpanAllowed(kind string) bool {
	if ct.sessionSpans == nil {
		ct.sessionSpans = map[string]int{}
	}
	if ct.sessionSpans[kind] >= maxSessionSpans {
		if ct.sessionsFolded == nil {
			ct.sessionsFolded = map[string]int{}
		}
		ct.sessionsFolded[kind]++
		return false
	}
	ct.sessionSpans[kind]++
	return true
}

// pendingEvent is a Kubernetes event for a pod not known yet.
type pendingEvent struct {
	ev *fact.K8sEvent
	at time.Time
}

// holdEvent keeps an Event whose pod the model has not seen yet.
func (c *Correlator) holdEvent(ev *fact.K8sEvent) {
	if c.pendingN >= maxPendingEvents {
		c.miss(names.MissEventBufferFull)
		return
	}
	if c.pendingEvents == nil {
		c.pendingEvents = map[string][]pendingEvent{}
	}
	cp := *ev
	c.pendingEvents[ev.PodUID] = append(c.pendingEvents[ev.PodUID], pendingEvent{ev: &cp, at: c.now})
	c.pendingN++
}

// releaseEvents hands a new pod the Events that came before it.
func (c *Correlator) releaseEvents(uid string) {
	held := c.pendingEvents[uid]
	if len(held) == 0 {
		return
	}
	delete(c.pendingEvents, uid)
	c.pendingN -= len(held)
	for _, h := range held {
		c.k8sEvent(h.ev)
	}
}

// expireEvents drops held Events whose pod never showed up.
func (c *Correlator) expireEvents() {
	for uid, held := range c.pendingEvents {
		if len(held) > 0 && c.now.Sub(held[len(held)-1].at) > pendingEventTTL {
			delete(c.pendingEvents, uid)
			c.pendingN -= len(held)
			for range held {
				c.miss(names.MissEventUnknownPod)
			}
		}
	}
}
