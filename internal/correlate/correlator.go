// Package correlate is podchron's lifecycle model: kernel events, the
// container runtime's view and the API server's view go in as one ordered
// stream of Inputs; pod facts are kept per pod; finished phases come out as
// spans (one trace per pod) and measurements go to an Observer.
//
// The model is a deterministic state machine. It reads no clock and no
// filesystem: every time it uses comes from the inputs (facts carry their own
// timestamps, Input.Time drives timers), so the same stream always yields the
// same spans — `tracer replay` relies on that.
//
// Where things are, in the order a fact travels:
//   - What goes in (fact.Input) and what measurements come out
//     (measure.Observer) are defined outside the model (internal/fact,
//     internal/measure); order.go sequences the sources by their own times.
//   - ingest_kernel.go, ingest_cni.go, ingest_signal.go, ingest_runtime.go,
//     ingest_api.go: one handler per source; they only update the model and
//     note changes. identity.go picks a container's init; session.go names
//     an exec session (hook, probe, exec); oom.go the scope of an OOM kill;
//     sandbox.go, outage.go, disruption.go more facts.
//   - model.go (containers, processes, signals, CNI calls) and pod.go (the
//     pod): the state; the fields that serve one phase are grouped in a
//     struct defined beside that phase's code.
//   - lifecycle.go: the one place that decides, for each noted change, which
//     phase ends and which span is emitted; timers.go makes the same
//     decisions when waiting is over; startup.go decides start-ups that
//     never become Ready.
//   - causes.go: why a container ended.
//   - emit_startup.go, emit_container.go, emit_termination.go: the spans;
//     emit.go: how every span leaves the model (once, with the pod's
//     resource and the common attributes).
//   - bounds.go: the caps on what a long-lived pod accumulates;
//     cleanup.go: forgetting finished pods.
package correlate

import (
	"maps"
	"slices"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/measure"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/correlate/cgroupid"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/redact"
)

// Config configures a Correlator.
type Config struct {
	NodeName string
	Sink     span.Sink
	Observer measure.Observer
	// CgroupRoots are extra kubepods root names (besides kubepods and
	// kubepods.slice), e.g. a test's custom root.
	CgroupRoots []string
	// StuckAfter: a terminating pod still present this long after its
	// deletion deadline is reported stuck.
	StuckAfter time.Duration
	// StartupTimeout: a pod not Ready this long after its creation gets its
	// pod.startup as an ERROR saying what it waits for (0: never give up;
	// termination, a terminal phase or the pod's end still end it).
	StartupTimeout time.Duration
	// ClusterName, when set, is k8s.cluster.name on every span.
	ClusterName string
	// Args is what of a command line a span carries (process.command_args;
	// redact.Redacted, the zero value, by default).
	Args redact.Policy
	// Filter decides which pods are traced (filter.go); the zero value
	// traces all.
	Filter Filter
	// Emitted are the span IDs the previous tracer instance on this node
	// emitted (the node's checkpoint: internal/checkpoint; nil: none, an
	// empty slice: a checkpoint with nothing in it). They are not emitted
	// again, and a pod whose root span is among them has ended: its later
	// facts are dropped (restart.go).
	Emitted []span.SpanID
	// WantEvents, when set, is told the UID of a pod the kubelet acted on
	// (the runtime's stop signal to one of its containers) or whose object
	// is gone while its containers still run, so that the API source opens
	// a window on its Events at once (watcher.Want). It must not block.
	WantEvents func(podUID string)
}

// Stats are the correlator's own counters.
type Stats struct {
	Inputs       uint64
	Misses       map[string]uint64 // correlation misses by reason
	LivePods     int
	LiveProcs    int
	SpansEmitted uint64
	// SpansFiltered: spans of pods the filter leaves out (not sent).
	SpansFiltered uint64
	// EndedPods: the tombstones of ended pods kept (ended.go).
	EndedPods int
}

// Correlator is the lifecycle state machine. It is not safe for concurrent
// use: one goroutine feeds it.
type Correlator struct {
	cfg    Config
	parser *cgroupid.Parser

	now      time.Time
	timersAt time.Time // when timers next run
	started  time.Time // tracer start (fact.Input.Start), zero if unknown
	apiUp    bool
	apiKnown bool
	// prior: the span IDs the previous instance emitted (Config.Emitted).
	prior      map[span.SpanID]struct{}
	apiReason  string
	runtimeGap *cri.Gap
	// shuttingDown: Shutdown is emitting what has ended.
	shuttingDown bool

	cgroups map[uint64]*cgroupRef
	// changes noted by the ingest handlers for the lifecycle step.
	changes []change
	// memcgOOMs: the last local OOM count seen per memory cgroup (oom.go).
	memcgOOMs map[uint64]uint64
	lastOOM   oomInvocation // the last OOM kill whose limit was found (oom.go)
	pods      map[string]*pod
	// gone keeps finished pods for a while (goneRetention): facts that
	// arrive after a pod's trace ended (the runtime's late sandbox removal,
	// its second CNI DEL) must not start a second trace for it, and the
	// late DEL is still measured in its namespace.
	gone       map[string]*pod
	endedPods  // tombstones of the pods whose trace ended (ended.go)
	bySandbox  map[string]*pod
	containers map[string]*container
	procs      map[uint32]*proc
	cni        map[uint32]*cniRun

	// outages: the sources unavailable now, and past outages (bounded).
	outages     map[string]*outage
	pastOutages []outage

	// mirrors maps a static pod's mirror UID to the static pod's own.
	mirrors map[string]string

	// Kubernetes events held for pods not seen yet (bounds.go).
	pendingEvents map[string][]pendingEvent
	pendingN      int

	seq   sequencer
	stats Stats
	// timed: a timer may decide a phase's end soon (Waiting). Set by every
	// fact handled, recomputed by the timers (timersArmed).
	timed bool
}

// New returns a Correlator.
func New(cfg Config) *Correlator {
	if cfg.Observer == nil {
		cfg.Observer = measure.NopObserver{}
	}
	if cfg.Sink == nil {
		cfg.Sink = span.SinkFunc(func(span.Span) {})
	}
	if cfg.StuckAfter == 0 {
		cfg.StuckAfter = 30 * time.Second
	}
	var prior map[span.SpanID]struct{} // nil: no checkpoint
	if cfg.Emitted != nil {
		prior = make(map[span.SpanID]struct{}, len(cfg.Emitted))
	}
	for _, id := range cfg.Emitted {
		prior[id] = struct{}{}
	}
	cfg.Emitted = nil
	return &Correlator{
		prior:      prior,
		cfg:        cfg,
		parser:     cgroupid.NewParser(cfg.CgroupRoots...),
		cgroups:    map[uint64]*cgroupRef{},
		memcgOOMs:  map[uint64]uint64{},
		pods:       map[string]*pod{},
		gone:       map[string]*pod{},
		bySandbox:  map[string]*pod{},
		containers: map[string]*container{},
		procs:      map[uint32]*proc{},
		cni:        map[uint32]*cniRun{},
		outages:    map[string]*outage{},
		stats:      Stats{Misses: map[string]uint64{}},
	}
}

// Stats returns a copy of the counters.
func (c *Correlator) Stats() Stats {
	s := c.stats
	s.Misses = make(map[string]uint64, len(c.stats.Misses))
	for k, v := range c.stats.Misses {
		s.Misses[k] = v
	}
	s.LivePods = len(c.pods)
	s.LiveProcs = len(c.procs)
	s.EndedPods = len(c.ended)
	return s
}

func (c *Correlator) miss(reason names.Miss) {
	c.stats.Misses[string(reason)]++
	c.cfg.Observer.CorrelationMiss(string(reason))
}

// missOn counts a miss about a pod whose trace is still open and tells it
// there too: a podchron.correlation_miss event on its root, with the
// reason and the container when one is named, so a trace that lacks a step
// says which and why (the count alone names no pod).
//
// One event per reason and container, at the first miss, with the count
// (a signal flood into a container the model does not know is one event).
func (c *Correlator) missOn(p *pod, reason names.Miss, container string) {
	c.miss(reason)
	if p == nil || p.finished {
		return
	}
	key := missKey{reason, container}
	if me := p.missEvents[key]; me != nil {
		me.count++
		if me.index >= 0 {
			p.rootEvents[me.index].Attrs = missAttrs(key, me.count)
		}
		return
	}
	if p.missEvents == nil {
		p.missEvents = map[missKey]*missEvent{}
	}
	idx := p.addRootEvent(span.SpanEvent{Name: names.EventCorrelationMiss, Time: c.now, Attrs: missAttrs(key, 1)})
	p.missEvents[key] = &missEvent{index: idx, count: 1}
}

func missAttrs(key missKey, count int64) []span.Attr {
	attrs := []span.Attr{span.String(names.MissReasonKey, string(key.reason)), span.Int(names.MissCount, count)}
	if key.container != "" {
		attrs = append(attrs, span.String(names.K8sContainerName, key.container))
	}
	return attrs
}

// Handle feeds one input through the model. Inputs come in arrival order;
// while sources report progress they are handled in the order of their
// sources' own times (see order.go).
func (c *Correlator) Handle(in fact.Input) {
	c.stats.Inputs++
	c.sequence(in)
}

// apply handles one input at its time.
func (c *Correlator) apply(in fact.Input) {
	if in.Time.After(c.now) {
		c.now = in.Time
	}
	if !in.Tick && in.Progress == nil && in.Losses == nil {
		// Any fact may arm a timer: the next timers' run says.
		c.timed = true
	}
	switch {
	case in.Kernel != nil:
		c.kernel(in.Kernel)
	case in.Runtime != nil:
		c.runtime(in.Runtime)
	case in.Pod != nil:
		c.podInfo(in.Pod)
	case in.Event != nil:
		c.k8sEvent(in.Event)
	case in.Endpoint != nil:
		c.endpointChange(in.Endpoint)
	case in.API != nil:
		c.apiStatus(in.API)
	case in.Cgroup != nil:
		c.cgroupSeen(in.Cgroup.ID, in.Cgroup.Path, c.now, true)
	case in.Proc != nil:
		c.procSeen(in.Proc)
	case in.Losses != nil:
		c.losses(in.Losses.Lost)
		c.throttled(in.Losses.Throttled)
	case in.Start != nil:
		c.started = in.Start.At
		if in.Start.NodeName != "" && c.cfg.NodeName == "" {
			c.cfg.NodeName = in.Start.NodeName
		}
		if len(in.Start.CgroupRoots) > 0 {
			c.parser = cgroupid.NewParser(append(append([]string(nil), c.cfg.CgroupRoots...), in.Start.CgroupRoots...)...)
		}
	}
	c.step()
	if c.seq.sequencing() {
		return // timers run at fixed points of the model's clock (advance)
	}
	// Timers run on ticks, and at most every timerEvery of input time
	// otherwise: per-input work stays independent of the number of pods.
	if in.Tick || !c.now.Before(c.timersAt) {
		c.tick()
		c.timersAt = c.now.Add(timerEvery)
	}
}

// Shutdown ends the model of a tracer that stops while pods live on (a
// restart, an upgrade): what has ended is emitted (settling containers, exec
// sessions, a start-up settling); live pods' root spans and the phases still
// in progress are not. The next tracer instance continues their traces, with
// the same trace and span IDs, and emits them once, when they end.
func (c *Correlator) Shutdown() {
	c.shuttingDown = true
	c.release(true)
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
		p := c.pods[uid]
		p.finishing = true
		if !p.startupDone && !p.readySeen.IsZero() {
			c.maybeStarted(p)
		}
		c.settleAtShutdown(p)
	}
}

// tracerStopped: why Flush leaves what is open unfinished.
const tracerStopped = "tracer stopped"

// Flush ends the model (replay, tests): every live pod's root span is emitted, marked
// unfinished (the tracer is shutting down). Phases in progress are emitted
// as unfinished too, so a restart does not lose what was seen.
func (c *Correlator) Flush() {
	c.release(true)
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
		p := c.pods[uid]
		c.finishPod(p, c.now, tracerStopped)
	}
}
