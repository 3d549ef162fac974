// Package pipeline wires podchron's sources (kernel probes, the runtime over
// CRI, the API server) into one ordered input stream for the correlator,
// optionally recording it. It owns every goroutine it starts.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podchron/podchron/internal/chans"
	"github.com/podchron/podchron/internal/clock"
	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/fact/cri"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/probe"
	"github.com/podchron/podchron/internal/record"
)

// Source produces inputs until ctx is done (or it fails).
type Source func(ctx context.Context, out chan<- fact.Input) error

// Config wires a pipeline.
type Config struct {
	// Kernel is the kernel event source (nil: no kernel facts, e.g. replay).
	Kernel probe.Source
	// Counters reads the kernel's emitted/lost counters, for loss reports.
	Counters func() (map[kernel.EventType]kernel.Counter, error)
	// Throttled reads the records each cgroup's budget in the kernel
	// refused (cumulative, by cgroup and kind), for loss reports that name
	// the cgroup: (*probe.Probes).Throttled.
	Throttled func() ([]fact.CgroupLoss, error)
	// Seed produces the start-up inputs (existing cgroups and processes)
	// before any live input is handled.
	Seed []fact.Input
	// Sources are the other live sources (runtime, API server).
	Sources map[string]Source
	// Correlator consumes the stream.
	Correlator *correlate.Correlator
	// Record, when set, gets every input before the correlator does.
	Record *record.Writer
	// Now is the clock inputs are stamped with (default: Timeline's Now,
	// or time.Now without a Timeline).
	Now func() time.Time
	// Timeline, when set, is the tracer's timeline (the boot clock): the
	// runtime's and the API server's wall-clock times are mapped onto it
	// before they are queued (see Placer), and the node wall clock's step
	// is re-measured at every tick. The kernel source and the other
	// sources' own clocks should be the timeline's too.
	Timeline *clock.Timeline
	// Tick is how often timers run (stuck terminations) and losses are read.
	Tick time.Duration
	// Buffer is the input channel's size (default 4096). Its memory is
	// resident once that many inputs have passed (a channel cycles through
	// its slots), 128 bytes an input: 512 KiB.
	Buffer int
	// Stats, when set, gets the pipeline's gauges while it runs.
	Stats *Stats
	// Heartbeat is called after each input and tick (health checks).
	Heartbeat func()
	// SourceState reports a source failing or recovering: a source that
	// stopped, and what the sources say of their upstream (the API
	// server's reachability, the runtime's gaps), mirrored from the inputs.
	SourceState func(name string, ok bool, reason string)
	Logger      *slog.Logger
	// Progress names the sources that report progress (fact.Progress):
	// the model then waits for them, so how late each one is does not change
	// the spans. It is written into the seed's Start input. The pipeline
	// reports the kernel's itself (fact.SourceKernel); other sources
	// send theirs (RuntimeSource, WithProgress).
	Progress []string
	// KernelDrain is subtracted from the kernel's progress: events are
	// stamped (boot clock, converted to wall time) before they are
	// submitted, and the conversion can be a little off; default 100ms.
	KernelDrain time.Duration
	// RuntimeKick, when set, gets a send (never blocking) for every
	// watched exit of a pid namespace's init (a container's end, as the
	// kernel sees it): the runtime source polls at once (criclient.WatchConfig
	// Kick), so the runtime's exit reason follows within a fraction of a
	// second instead of a poll interval.
	RuntimeKick chan<- struct{}
	// RuntimePoll, when set, gets a send (never blocking) for every pod
	// update from the API server: the model holds it until the runtime's
	// progress has passed its time, so the runtime source polls once now
	// (criclient.WatchConfig Poll) rather than at its next interval. A
	// pod's end (its object gone) and its Ready waited up to a second
	// for that poll: e2e 27, 2026-11-28, held pod.termination 0.92 s in
	// two of three pods.
	RuntimePoll chan<- struct{}
	// KernelIdleEvery is how often the kernel's progress is checked while
	// its ring buffer is quiet and the model waits on its clock (default
	// 50 ms; see kernelIdleProgress, correlate.Correlator.Waiting).
	// While the model waits for nothing, the check rides the tick (Tick:
	// 500 ms in the tracer, well inside the model's staleness limit): an
	// idle node's tracer then wakes twice a second for both, not twenty
	// times, nor four for two timers out of phase.
	KernelIdleEvery time.Duration
	// Pace, when set, is the pace of the sources' own progress reports
	// (RuntimeSource, WithProgress given it): the loop makes it fast
	// while the model waits on its clock, as the kernel's idle check.
	Pace *Pace
}

// containerInitExit tells whether ev is a watched exit of a pid
// namespace's init: a container's end, unless its pod shares one
// namespace (then the runtime's regular poll reports it).
func containerInitExit(ev kernel.Event) bool {
	e, ok := ev.(*kernel.ExitEvent)
	return ok && e.NSInit && e.Origin&kernel.OriginWatched != 0
}

// nudge sends on ch without blocking (nil: no-op): one pending signal is
// enough, later ones coalesce into it.
func nudge(ch chan<- struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (cfg *Config) withDefaults() {
	if cfg.Now == nil && cfg.Timeline != nil {
		cfg.Now = cfg.Timeline.Now
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick == 0 {
		cfg.Tick = time.Second
	}
	if cfg.Buffer == 0 {
		// 4096: the model handles an input in well under a microsecond, so
		// this is most of a second of the maximum exec storm even when the
		// model pauses; behind it the ring buffer holds more. It was 16384
		// (2 MiB resident on a busy node).
		cfg.Buffer = 4096
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.KernelDrain == 0 {
		cfg.KernelDrain = 100 * time.Millisecond
	}
	if cfg.KernelIdleEvery == 0 {
		cfg.KernelIdleEvery = 50 * time.Millisecond
	}
}

// Run feeds the correlator until ctx is done, then shuts it down (see
// correlate.Correlator.Shutdown).
func Run(ctx context.Context, cfg Config) error {
	cfg.withDefaults()
	r := newRun(cfg)
	for _, in := range cfg.Seed {
		r.handle(r.seedInput(in))
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if cfg.Kernel != nil {
		r.goSource(ctx, SourceKernel, func() error { return r.readKernel(ctx) })
	}
	for _, n := range r.nodes {
		if src := cfg.Sources[n.name]; src != nil {
			r.startSource(ctx, n, src)
		}
	}
	runErr := r.loop(ctx)
	cancel()
	r.wg.Wait()
	r.drain()
	// Live pods' traces are continued by the next tracer instance.
	cfg.Correlator.Shutdown()
	if cfg.Record != nil {
		if err := cfg.Record.Flush(); err != nil && runErr == nil {
			runErr = fmt.Errorf("flush record: %w", err)
		}
	}
	return runErr
}

// run is one Run: the input queue, the nodes sending into it, and the main
// loop's state. Only the main loop handles inputs.
type run struct {
	cfg    Config
	log    *slog.Logger
	in     chan item
	errc   chan error
	wg     sync.WaitGroup
	health sourceHealth
	stats  *Stats
	nodes  []*node // the kernel's first, then the other sources by name
	kernel *node   // nil without a kernel source

	// kernelProgress: the pipeline reports the kernel's progress (it is
	// waited for, and the ring buffer's fill level can be read).
	kernelProgress bool
	ringPending    func() int
	// waiting numbers the kernel reader's current wait for the ring buffer
	// (each wait its own number), having handed over all it read before;
	// 0 while it hands an event over.
	waiting    atomic.Uint64
	kernelMark time.Time
	kernelIdle idleCheck
	losses     lossPoller
	step       time.Duration // the node wall clock's step, last measured
}

// item is an input in the queue, with the node that sent it.
type item struct {
	from *node
	in   fact.Input
}

// node is one sender into the input queue: a source, by name.
type node struct {
	name string
	// queued counts the inputs the node is handing over or has handed over
	// that the main loop has not handled yet.
	queued  atomic.Int64
	blocked chans.Blocked
	// delay: how long its inputs waited, from their stamp (Input.Time)
	// to their handling.
	delay delayHistogram
	// left holds, in order, what a source sent once the queue took no more
	// (ctx done): handled with the drain. Only its forwarder writes it,
	// before the run's WaitGroup is done.
	left []fact.Input
}

func newRun(cfg Config) *run {
	r := &run{
		cfg:         cfg,
		log:         cfg.Logger,
		in:          make(chan item, cfg.Buffer),
		errc:        make(chan error, len(cfg.Sources)+1),
		health:      sourceHealth{report: cfg.SourceState},
		stats:       cfg.Stats,
		ringPending: func() int { return 0 },
		losses:      lossPoller{counters: cfg.Counters, throttled: cfg.Throttled, log: cfg.Logger, seen: map[cgroupKind]uint64{}},
	}
	if r.stats == nil {
		r.stats = &Stats{}
	}
	r.kernelProgress = cfg.Kernel != nil && slices.Contains(cfg.Progress, fact.SourceKernel)
	if p, ok := cfg.Kernel.(interface{ Pending() int }); ok {
		r.ringPending = p.Pending
	} else {
		r.kernelProgress = false // no way to know when the ring buffer is drained
	}
	if cfg.Kernel != nil {
		r.kernel = &node{name: SourceKernel}
		r.nodes = append(r.nodes, r.kernel)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Sources)) {
		r.nodes = append(r.nodes, &node{name: name})
	}
	r.stats.set(r.nodes)
	return r
}

// seedInput adds the sources that report progress to the seed's Start
// input.
func (r *run) seedInput(in fact.Input) fact.Input {
	if in.Start == nil || len(r.cfg.Progress) == 0 {
		return in
	}
	st := *in.Start
	for _, src := range r.cfg.Progress {
		if src != fact.SourceKernel || r.kernelProgress {
			st.Progress = append(st.Progress, src)
		}
	}
	in.Start = &st
	return in
}

// handle records an input and hands it to the model.
func (r *run) handle(in fact.Input) {
	r.health.observe(in)
	if in.Pod != nil {
		nudge(r.cfg.RuntimePoll)
	}
	if r.cfg.Record != nil {
		if err := r.cfg.Record.Write(in); err != nil {
			r.log.Warn("record input", "err", err)
		}
	}
	r.cfg.Correlator.Handle(in)
	r.stats.pending.Store(int64(r.cfg.Correlator.Pending()))
	if r.cfg.Heartbeat != nil {
		r.cfg.Heartbeat()
	}
}

// handleItem handles an input from the queue.
func (r *run) handleItem(it item) {
	it.from.delay.observe(r.cfg.Now().Sub(it.in.Time))
	r.handle(it.in)
	it.from.queued.Add(-1)
}

// send puts an input from n into the queue unless ctx is done first,
// counting it as queued and the time n waited on a full queue.
func (r *run) send(ctx context.Context, n *node, in fact.Input) bool {
	n.queued.Add(1)
	if !chans.SendTimed(ctx, r.in, item{from: n, in: in}, &n.blocked) {
		n.queued.Add(-1)
		return false
	}
	return true
}

// goSource runs a source in a goroutine of the run; a source failing
// (other than by ctx) is reported, and the kernel's ends the run.
func (r *run) goSource(ctx context.Context, name string, src func() error) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		err := src()
		if err != nil && ctx.Err() == nil {
			r.log.Warn("source stopped", "source", name, "err", err)
			if r.cfg.SourceState != nil {
				r.cfg.SourceState(name, false, err.Error())
			}
			if name == SourceKernel {
				r.errc <- fmt.Errorf("kernel source: %w", err)
			}
		}
	}()
}

// startSource runs src, its inputs forwarded to the queue as node n's.
func (r *run) startSource(ctx context.Context, n *node, src Source) {
	q := make(chan fact.Input)
	r.goSource(ctx, n.name, func() error {
		defer close(q)
		return src(ctx, q)
	})
	pl := NewPlacer(r.cfg.Timeline, n.name)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for in := range q {
			pl.Place(&in)
			if len(n.left) > 0 || !r.send(ctx, n, in) {
				n.left = append(n.left, in)
			}
		}
	}()
}

// readKernel hands the kernel's events over until ctx is done. While
// events flow, the ring buffer's order is the kernel's progress: records
// are read in the order they were reserved, each stamped just before, so
// once an event is handed over, every event stamped before it (less
// KernelDrain for a stamp-to-reserve delay and the clock conversion) was
// too. When the buffer runs dry, the main loop's idle check takes over.
func (r *run) readKernel(ctx context.Context) error {
	var mark time.Time
	for n := uint64(1); ; n++ {
		r.waiting.Store(n)
		ev, err := r.cfg.Kernel.Next(ctx)
		r.waiting.Store(0)
		if err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		if !r.send(ctx, r.kernel, fact.Input{Time: r.cfg.Now(), Kernel: ev}) {
			return nil
		}
		if containerInitExit(ev) {
			nudge(r.cfg.RuntimeKick)
		}
		if until := ev.Hdr().Time.Add(-r.cfg.KernelDrain); r.kernelProgress && until.Sub(mark) >= kernelMarkEvery {
			mark = until
			progress := fact.Input{Time: r.cfg.Now(), Progress: &fact.Progress{Source: fact.SourceKernel, Until: until}}
			if !r.send(ctx, r.kernel, progress) {
				return nil
			}
		}
	}
}

// loop handles the queue, the ticks and the kernel's idle checks until ctx
// is done or the kernel source fails (its error returned).
func (r *run) loop(ctx context.Context) error {
	ticker := time.NewTicker(r.cfg.Tick)
	defer ticker.Stop()
	var idle idlePace
	if r.kernelProgress {
		idle.start(r.cfg.KernelIdleEvery)
		defer idle.stop()
	}
	for {
		waiting := r.cfg.Correlator.Waiting()
		r.cfg.Pace.set(waiting)
		if idle.pace(waiting) {
			// The model waits now: check at once, so what it holds is
			// released one fast check later, as if it had been fast all along.
			r.kernelIdleProgress()
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-r.errc:
			return err
		case it := <-r.in:
			r.handleItem(it)
		case <-ticker.C:
			if idle.quiet() {
				// First, so the tick's timers run past the newest mark.
				r.kernelIdleProgress()
			}
			r.tick()
		case <-idle.c():
			r.kernelIdleProgress()
		}
	}
}

// idlePace is the kernel's idle check's cadence: its own fast ticker while
// the model waits on its clock, the tick otherwise (quiet). One timer less
// on an idle node: each timer's wakeup also wakes the Go runtime's sysmon a
// few times before it sleeps again (bench/idle.sh).
type idlePace struct {
	t      *time.Ticker // the fast check's; stopped while quiet
	fast   time.Duration
	on     bool // the kernel's progress is checked at all
	isFast bool
}

func (p *idlePace) start(fast time.Duration) {
	p.fast, p.on = fast, true
}

func (p *idlePace) stop() {
	if p.t != nil {
		p.t.Stop()
	}
}

// c is the fast ticker's channel (nil, never ready, while quiet or without
// a kernel check).
func (p *idlePace) c() <-chan time.Time {
	if !p.isFast {
		return nil
	}
	return p.t.C
}

// quiet reports whether the tick carries the check.
func (p *idlePace) quiet() bool { return p.on && !p.isFast }

// pace sets the cadence for whether the model waits, reporting a switch to
// fast.
func (p *idlePace) pace(waiting bool) bool {
	if !p.on || waiting == p.isFast {
		return false
	}
	p.isFast = waiting
	if !waiting {
		p.t.Stop() // no stale tick is received after Stop (Go 1.23+)
		return false
	}
	if p.t == nil {
		p.t = time.NewTicker(p.fast)
	} else {
		p.t.Reset(p.fast)
	}
	return true
}

// tick reports the kernel's losses, then a tick.
func (r *run) tick() {
	remeasure(r.cfg.Timeline, &r.step, r.log)
	r.reportLosses()
	r.handle(fact.Input{Time: r.cfg.Now(), Tick: true, Backlog: r.backlog()})
}

// backlog reports whether sources' inputs wait in the queue: an input the
// loop makes now is ahead of them by the model's lag (fact.Input.Backlog),
// which the model must not take for a source's silence.
func (r *run) backlog() bool { return len(r.in) > 0 }

// kernelIdleProgress reports the kernel's progress while the ring buffer is
// quiet (idleCheck). Its own cadence, not the model's tick: a fact of
// another source (the runtime's exit of a container) waits in the model
// until the kernel's view has passed its time, so a quiet kernel's progress
// every tick (500 ms in the tracer, two of them to prove it) was most of a
// span's latency.
func (r *run) kernelIdleProgress() {
	now := r.cfg.Now()
	unhandled := r.kernel.queued.Load() > 0
	if until, ok := r.kernelIdle.check(now, r.waiting.Load(), unhandled, r.ringPending); ok && until.After(r.kernelMark) {
		r.kernelMark = until
		r.handle(fact.Input{Time: now, Backlog: r.backlog(), Progress: &fact.Progress{Source: fact.SourceKernel, Until: until.Add(-r.cfg.KernelDrain)}})
	}
}

// reportLosses reports the kernel events lost, and the records cgroups'
// budgets refused, since the last tick.
func (r *run) reportLosses() {
	if l := r.losses.poll(); l != nil {
		r.handle(fact.Input{Time: r.cfg.Now(), Losses: l, Backlog: r.backlog()})
	}
}

// drain handles what the sources queued before they stopped.
func (r *run) drain() {
	for {
		select {
		case it := <-r.in:
			r.handleItem(it)
			continue
		default:
		}
		break
	}
	for _, n := range r.nodes {
		for _, in := range n.left {
			r.handle(in)
		}
		n.left = nil
	}
}

// kernelMarkEvery spaces the kernel's progress while events flow.
const kernelMarkEvery = 100 * time.Millisecond

// idleCheck tells, at the pipeline's idle checks (Config.KernelIdleEvery;
// "ticks" below), up to when the kernel's view is complete. At a tick where the ring buffer is empty (the kernel source's
// Pending), the reader waits and every event it read was handled, every event
// submitted before that tick was consumed; if at the next tick the reader
// is still in that same wait, whatever it consumed was also handed over and
// handled: the kernel is complete up to the earlier tick. (A reader merely
// waiting proves nothing: on a loaded machine it may not have run for a
// while, with events waiting in the buffer.)
type idleCheck struct {
	wait uint64    // the reader's wait at the candidate tick
	at   time.Time // the candidate tick
}

func (k *idleCheck) check(now time.Time, wait uint64, unhandled bool, pending func() int) (time.Time, bool) {
	if wait == 0 || unhandled {
		k.wait = 0
		return time.Time{}, false
	}
	if k.wait == wait {
		// Same wait as at the candidate tick: complete up to it. The
		// buffer may have filled since: this tick is not a candidate.
		at := k.at
		k.wait = 0
		if pending() == 0 {
			k.wait, k.at = wait, now
		}
		return at, true
	}
	k.wait = 0
	if pending() == 0 {
		k.wait, k.at = wait, now
	}
	return time.Time{}, false
}

// sourceHealth mirrors what the inputs say of their sources' upstreams into
// Config.SourceState: the API server's status (fact.APIStatus) and the
// runtime's reachability (cri.EventRuntimeUnavailable, then any other
// runtime event; before any, the runtime's first progress report, which
// only a successful poll makes: a runtime with no containers sends no
// event, and its readiness stayed "starting"). Only changes are reported.
type sourceHealth struct {
	report  func(name string, ok bool, reason string)
	runtime *bool
}

func (h *sourceHealth) observe(in fact.Input) {
	if h.report == nil {
		return
	}
	switch {
	case in.API != nil:
		h.report(SourceAPI, in.API.Available, in.API.Err)
	case in.Progress != nil && in.Progress.Source == fact.SourceRuntime && h.runtime == nil:
		up := true
		h.runtime = &up
		h.report(SourceRuntime, true, "")
	case in.Runtime != nil:
		up := in.Runtime.Type != cri.EventRuntimeUnavailable
		if h.runtime != nil && *h.runtime == up {
			return
		}
		h.runtime = &up
		reason := ""
		if !up && in.Runtime.Gap != nil {
			reason = in.Runtime.Gap.String()
		}
		h.report(SourceRuntime, up, reason)
	}
}

// The sources' names, as Config.Sources and SourceState use them.
var (
	SourceKernel  = names.SourceKernel.Label()
	SourceRuntime = names.SourceRuntime.Label()
	SourceAPI     = names.SourceAPI.Label()
)

// lossPoller turns the kernel's cumulative loss counters into reports of
// what was lost since the previous poll.
type lossPoller struct {
	counters  func() (map[kernel.EventType]kernel.Counter, error)
	throttled func() ([]fact.CgroupLoss, error)
	log       *slog.Logger
	lastLost  uint64
	seen      map[cgroupKind]uint64 // cumulative throttled counts last read
}

type cgroupKind struct {
	id   uint64
	kind string
}

// poll returns what was lost since the last poll, nil if nothing was.
func (p *lossPoller) poll() *fact.Losses {
	var out fact.Losses
	if p.counters != nil {
		if c, err := p.counters(); err == nil {
			var lost uint64
			for _, v := range c {
				lost += v.Lost
			}
			if lost > p.lastLost {
				out.Lost = lost - p.lastLost
				p.log.Warn("kernel events lost: the ring buffer was full", "lost", out.Lost, "total", lost)
			}
			p.lastLost = lost
		}
	}
	if p.throttled != nil {
		out.Throttled = p.pollThrottled()
	}
	if out.Lost == 0 && len(out.Throttled) == 0 {
		return nil
	}
	return &out
}

// pollThrottled diffs the cumulative throttled counts against the last
// read. A count below the last read is a budget entry the kernel evicted and
// made again: all of it is new. Cgroups no longer listed are forgotten.
func (p *lossPoller) pollThrottled() []fact.CgroupLoss {
	th, err := p.throttled()
	if err != nil {
		p.log.Debug("read throttled signal records", "err", err)
		return nil
	}
	var out []fact.CgroupLoss
	now := make(map[cgroupKind]uint64, len(th))
	for _, l := range th {
		k := cgroupKind{l.CgroupID, l.Kind}
		now[k] = l.Count
		n := l.Count
		if last := p.seen[k]; last <= n {
			n -= last
		}
		if n == 0 {
			continue
		}
		out = append(out, fact.CgroupLoss{CgroupID: l.CgroupID, Kind: l.Kind, Count: n})
		level := slog.LevelDebug
		if p.seen[k] == 0 { // the cgroup's first throttling (since its budget entry was made)
			level = slog.LevelWarn
		}
		p.log.Log(context.Background(), level, "kernel records throttled: a cgroup is over its signal budget",
			"cgroup_id", l.CgroupID, "kind", l.Kind, "throttled", n, "total", l.Count)
	}
	p.seen = now
	return out
}
