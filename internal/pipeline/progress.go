package pipeline

import (
	"context"
	"time"

	"github.com/podchron/podchron/internal/chans"

	"github.com/podchron/podchron/internal/fact"

	criclient "github.com/podchron/podchron/internal/cri"
	"github.com/podchron/podchron/internal/fact/cri"
)

// RuntimeSource turns the CRI watcher's events into inputs and reports the
// runtime's progress: once every change of a poll has been handed over, the
// runtime's view is complete up to that poll's snapshot time (the watcher
// publishes a snapshot as Latest only after sending its changes). A poll
// that found nothing new is progress too, which a stream of changes alone
// would not show. It reports at pace's period, and at once when the pace
// goes fast (nil: every 250 ms).
func RuntimeSource(events <-chan cri.Event, latest func() *criclient.Snapshot, pace *Pace, now func() time.Time) Source {
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context, out chan<- fact.Input) error {
		t := newPacer(pace, defaultProgressEvery)
		defer t.stop()
		var mark time.Time
		send := func(in fact.Input) bool { return chans.Send(ctx, out, in) }
		// progress reports the latest poll once its changes are all
		// handed over: Latest first, then an empty queue (the watcher
		// publishes a snapshot only after sending its changes).
		progress := func() bool {
			snap := latest()
			if snap == nil || !snap.Time.After(mark) || len(events) > 0 {
				return true
			}
			mark = snap.Time
			return send(fact.Input{Time: now(), Progress: &fact.Progress{Source: fact.SourceRuntime, Until: mark}})
		}
		for {
			select {
			case <-ctx.Done():
				return nil
			case ev, ok := <-events:
				if !ok {
					return nil
				}
				e := ev
				if !send(fact.Input{Time: now(), Runtime: &e}) || !progress() {
					return nil
				}
			case <-t.t.C:
				t.sync()
				if !progress() {
					return nil
				}
			case <-t.now:
				t.sync()
				if !progress() {
					return nil
				}
			}
		}
	}
}

// CRI is the runtime source: the CRI watcher (criclient.Watch) polling the
// runtime, its changes as inputs and each poll as the runtime's progress
// (every that often).
func CRI(cfg criclient.WatchConfig, every time.Duration) Source {
	return CRIWithClock(cfg, NewPace(every, every), nil)
}

// CRIWithClock is CRI with its progress at pace and its inputs stamped by
// now (the tracer's timeline; nil: time.Now).
func CRIWithClock(cfg criclient.WatchConfig, pace *Pace, now func() time.Time) Source {
	return func(ctx context.Context, out chan<- fact.Input) error {
		evs, w := criclient.Watch(ctx, cfg, 1024)
		return RuntimeSource(evs, w.Latest, pace, now)(ctx, out)
	}
}

// WithProgress reports progress for a source that delivers facts as they
// come and stamps each with the time it sends it (the API server's watcher):
// every interval in which the source had nothing in flight, its view is
// complete up to now, less margin (a fact stamped but not yet handed over).
// Intervals follow pace, and the switch to fast ends one at once (nil:
// every 250 ms).
func WithProgress(name string, src Source, pace *Pace, margin time.Duration, now func() time.Time) Source {
	if now == nil {
		now = time.Now
	}
	return func(ctx context.Context, out chan<- fact.Input) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		mid := make(chan fact.Input, 256)
		done := make(chan error, 1)
		go func() { done <- src(ctx, mid) }()
		t := newPacer(pace, defaultProgressEvery)
		defer t.stop()
		var mark time.Time
		report := func() bool {
			t.sync()
			until := now().Add(-margin)
			if len(mid) > 0 || !until.After(mark) {
				return true
			}
			mark = until
			return chans.Send(ctx, out, fact.Input{Time: now(), Progress: &fact.Progress{Source: name, Until: until}})
		}
		for {
			select {
			case in := <-mid:
				if !chans.Send(ctx, out, in) {
					return <-done
				}
			case err := <-done:
				// Hand over what it queued before it stopped.
				for {
					select {
					case in := <-mid:
						if chans.Send(ctx, out, in) {
							continue
						}
					default:
					}
					break
				}
				return err
			case <-t.t.C:
				if !report() {
					return <-done
				}
			case <-t.now:
				if !report() {
					return <-done
				}
			}
		}
	}
}
