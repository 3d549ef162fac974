package pipeline

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/correlate"
	criclient "github.com/podchron/podchron/internal/cri"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
)

// marksWithin counts the progress reports out gets within d.
func marksWithin(out <-chan fact.Input, d time.Duration) int {
	n := 0
	for end := time.After(d); ; {
		select {
		case in := <-out:
			if in.Progress != nil {
				n++
			}
		case <-end:
			return n
		}
	}
}

// A source under a Pace reports at the quiet period while the model waits
// for nothing, at the fast one while it waits, and at the quiet one again
// after.
func TestPaceDrivesASourcesProgress(t *testing.T) {
	pace := NewPace(10*time.Millisecond, time.Hour)
	out := make(chan fact.Input, 256)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	src := func(ctx context.Context, out chan<- fact.Input) error { <-ctx.Done(); return nil }
	go func() { _ = WithProgress(fact.SourceAPI, src, pace, time.Millisecond, nil)(ctx, out) }()

	if n := marksWithin(out, 200*time.Millisecond); n != 0 {
		t.Fatalf("%d progress reports in 200 ms while quiet (an hour's period)", n)
	}
	pace.set(true)
	if n := marksWithin(out, 300*time.Millisecond); n < 3 {
		t.Errorf("%d progress reports in 300 ms at a 10 ms pace", n)
	}
	pace.set(false)
	marksWithin(out, 50*time.Millisecond) // one fast tick may be under way
	if n := marksWithin(out, 200*time.Millisecond); n != 0 {
		t.Errorf("%d progress reports in 200 ms after the switch back to quiet", n)
	}
}

// The switch to fast asks each source for a report at once: here both
// periods are an hour, so only the switch can bring one, every time.
func TestPaceSwitchAsksAtOnce(t *testing.T) {
	pace := NewPace(time.Hour, time.Hour)
	events := make(chan cri.Event)
	var snap atomic.Pointer[criclient.Snapshot]
	snap.Store(&criclient.Snapshot{Time: time.Now()})
	out := make(chan fact.Input, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = RuntimeSource(events, snap.Load, pace, nil)(ctx, out) }()
	for i := range 3 {
		pace.set(true)
		select {
		case in := <-out:
			if in.Progress == nil || !in.Progress.Until.Equal(snap.Load().Time) {
				t.Fatalf("switch %d: got %+v, want the runtime's progress to its snapshot", i, in)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("switch %d: no progress report", i)
		}
		pace.set(false)
		snap.Store(&criclient.Snapshot{Time: snap.Load().Time.Add(time.Second)})
	}
}

// In the pipeline: the runtime's input held for the API server's progress
// makes the model wait, so the loop makes the pace fast and the API source
// reports at its fast period (its report at the switch can come before the
// input's time plus the source's margin); with a quiet period of an hour
// the input would otherwise be held that long.
func TestHeldInputMakesThePaceFast(t *testing.T) {
	t0 := time.Now()
	pace := NewPace(20*time.Millisecond, time.Hour)
	send := make(chan fact.Input)
	stats := &Stats{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := func(ctx context.Context, out chan<- fact.Input) error { <-ctx.Done(); return nil }
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{
			Sources: map[string]Source{
				SourceRuntime: func(ctx context.Context, out chan<- fact.Input) error {
					for {
						select {
						case in := <-send:
							out <- in
						case <-ctx.Done():
							return nil
						}
					}
				},
				SourceAPI: WithProgress(fact.SourceAPI, api, pace, time.Millisecond, nil),
			},
			Seed:       []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
			Correlator: correlate.New(correlate.Config{}),
			Stats:      stats,
			Tick:       time.Hour,
			Progress:   []string{fact.SourceAPI, fact.SourceRuntime},
			Pace:       pace,
		})
	}()
	time.Sleep(100 * time.Millisecond)
	sent := time.Now()
	send <- fact.Input{Time: sent, Runtime: &cri.Event{Type: cri.EventContainerStarted, At: sent, Observed: sent,
		Container: &cri.Container{ID: "c1", PodUID: "u1", Name: "app", StartedAt: sent}}}
	waitHandled(t, stats, sent, 5*time.Second, 20*time.Millisecond, ": the API source was not asked")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
