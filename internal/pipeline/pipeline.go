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
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
	// Seed produces the start-up inputs (existing cgroups and processes)
	// before any live input is handled.
	Seed []fact.Input
	// Sources are the other live sources (runtime, API server).
	Sources map[string]Source
	// Correlator consumes the stream.
	Correlator *correlate.Correlator
	// Record, when set, gets every input before the correlator does.
	Record *record.Writer
	// Now is the clock inputs are stamped with.
	Now func() time.Time
	// Tick is how often timers run (stuck terminations) and losses are read.
	Tick time.Duration
	// Buffer is the input channel's size.
	Buffer int
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
}

// containerInitExit tells whether ev is a watched exit of a pid
// namespace's init: a container's end, unless its pod shares one
// namespace (then the runtime's regular poll reports it).
func containerInitExit(ev kernel.Event) bool {
	e, ok := ev.(*kernel.ExitEvent)
	return ok && e.NSInit && e.Origin&kernel.OriginWatched != 0
}

// Run feeds the correlator until ctx is done, then shuts it down (see
// correlate.Correlator.Shutdown).
func Run(ctx context.Context, cfg Config) error {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Tick == 0 {
		cfg.Tick = time.Second
	}
	if cfg.Buffer == 0 {
		cfg.Buffer = 16384
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.KernelDrain == 0 {
		cfg.KernelDrain = 100 * time.Millisecond
	}
	log := cfg.Logger
	kernelProgress := cfg.Kernel != nil && slices.Contains(cfg.Progress, fact.SourceKernel)
	pending := func() int { return 0 }
	if p, ok := cfg.Kernel.(interface{ Pending() int }); ok {
		pending = p.Pending
	} else {
		kernelProgress = false // no way to know when the ring buffer is drained
	}
	// kernelSent counts the kernel events sent, kernelHandled those handled
	// (the main loop's own count): the kernel's progress needs every event
	// the reader read to be handled, whatever else is queued.
	var kernelSent atomic.Uint64
	var kernelHandled uint64
	health := sourceHealth{report: cfg.SourceState}
	handle := func(in fact.Input) {
		health.observe(in)
		if cfg.Record != nil {
			if err := cfg.Record.Write(in); err != nil {
				log.Warn("record input", "err", err)
			}
		}
		cfg.Correlator.Handle(in)
		if in.Kernel != nil {
			kernelHandled++
		}
		if cfg.Heartbeat != nil {
			cfg.Heartbeat()
		}
	}
	for _, in := range cfg.Seed {
		if in.Start != nil && len(cfg.Progress) > 0 {
			st := *in.Start
			for _, src := range cfg.Progress {
				if src != fact.SourceKernel || kernelProgress {
					st.Progress = append(st.Progress, src)
				}
			}
			in.Start = &st
		}
		handle(in)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan fact.Input, cfg.Buffer)
	var wg sync.WaitGroup
	errc := make(chan error, len(cfg.Sources)+1)
	start := func(name string, src Source) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := src(ctx, in)
			if err != nil && ctx.Err() == nil {
				log.Warn("source stopped", "source", name, "err", err)
				if cfg.SourceState != nil {
					cfg.SourceState(name, false, err.Error())
				}
				if name == SourceKernel {
					errc <- fmt.Errorf("kernel source: %w", err)
				}
			}
		}()
	}
	// waiting numbers the kernel reader's current wait for the ring buffer
	// (each wait its own number), having handed over all it read before;
	// 0 while it hands an event over.
	var waiting atomic.Uint64
	if cfg.Kernel != nil {
		start(SourceKernel, func(ctx context.Context, out chan<- fact.Input) error {
			// While events flow, the ring buffer's order is the kernel's
			// progress: records are read in the order they were reserved,
			// each stamped just before, so once an event is handed over,
			// every event stamped before it (less KernelDrain for a
			// stamp-to-reserve delay and the clock conversion) was too.
			// When the buffer runs dry, the main loop's idle check takes
			// over.
			var mark time.Time
			for n := uint64(1); ; n++ {
				waiting.Store(n)
				ev, err := cfg.Kernel.Next(ctx)
				waiting.Store(0)
				if err != nil {
					if errors.Is(err, io.EOF) || ctx.Err() != nil {
						return nil
					}
					return err
				}
				select {
				case out <- fact.Input{Time: cfg.Now(), Kernel: ev}:
					kernelSent.Add(1)
				case <-ctx.Done():
					return nil
				}
				if cfg.RuntimeKick != nil && containerInitExit(ev) {
					select {
					case cfg.RuntimeKick <- struct{}{}:
					default: // a kick is pending already
					}
				}
				if until := ev.Hdr().Time.Add(-cfg.KernelDrain); kernelProgress && until.Sub(mark) >= kernelMarkEvery {
					mark = until
					select {
					case out <- fact.Input{Time: cfg.Now(), Progress: &fact.Progress{Source: fact.SourceKernel, Until: until}}:
					case <-ctx.Done():
						return nil
					}
				}
			}
		})
	}
	for name, src := range cfg.Sources {
		start(name, src)
	}

	ticker := time.NewTicker(cfg.Tick)
	defer ticker.Stop()
	var lastLost uint64
	var kernelMark time.Time
	var kernelIdle idleCheck

	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-errc:
			runErr = err
			break loop
		case x := <-in:
			handle(x)
		case <-ticker.C:
			if cfg.Counters != nil {
				if c, err := cfg.Counters(); err == nil {
					var lost uint64
					for _, v := range c {
						lost += v.Lost
					}
					if lost > lastLost {
						handle(fact.Input{Time: cfg.Now(), Losses: &fact.Losses{Lost: lost - lastLost}})
						log.Warn("kernel events lost: the ring buffer was full", "lost", lost-lastLost, "total", lost)
					}
					lastLost = lost
				}
			}
			now := cfg.Now()
			if kernelProgress {
				if until, ok := kernelIdle.check(now, waiting.Load(), kernelSent.Load() > kernelHandled, pending); ok && until.After(kernelMark) {
					kernelMark = until
					handle(fact.Input{Time: now, Progress: &fact.Progress{Source: fact.SourceKernel, Until: until.Add(-cfg.KernelDrain)}})
				}
			}
			handle(fact.Input{Time: now, Tick: true})
		}
	}
	cancel()
	wg.Wait()
	// Drain what the sources queued before they stopped.
	for {
		select {
		case x := <-in:
			handle(x)
			continue
		default:
		}
		break
	}
	// Live pods' traces are continued by the next tracer instance.
	cfg.Correlator.Shutdown()
	if cfg.Record != nil {
		if err := cfg.Record.Flush(); err != nil && runErr == nil {
			runErr = fmt.Errorf("flush record: %w", err)
		}
	}
	return runErr
}

// kernelMarkEvery spaces the kernel's progress while events flow.
const kernelMarkEvery = 100 * time.Millisecond

// idleCheck tells, at the pipeline's ticks, up to when the kernel's view is
// complete. At a tick where the ring buffer is empty (the kernel source's
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
// runtime event). Only changes are reported.
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
