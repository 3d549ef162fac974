package pipeline

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/record"
)

// waitFor polls the pipeline's stats until ok says they are as wanted.
func waitFor(t *testing.T, st *Stats, what string, ok func(Snapshot) bool) Snapshot {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := st.Snapshot()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: stats %+v", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func nodeOf(s Snapshot, name string) NodeStats {
	for _, n := range s.Nodes {
		if n.Node == name {
			return n
		}
	}
	return NodeStats{}
}

// A consumer that does not keep up shows in the stats: the inputs its
// source handed over and that wait to be handled, and the time the source
// waited on the full queue; both as they are, while the pipeline runs.
func TestStatsBlockedConsumer(t *testing.T) {
	const sent = 5
	gate := make(chan struct{})
	var handled atomic.Int64
	src := func(ctx context.Context, out chan<- fact.Input) error {
		for range sent {
			select {
			case out <- fact.Input{Time: time.Now(), Tick: true}:
			case <-ctx.Done():
				return nil
			}
		}
		<-ctx.Done()
		return nil
	}
	var st Stats
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{
			Sources:    map[string]Source{SourceRuntime: src},
			Correlator: correlate.New(correlate.Config{}),
			Tick:       time.Hour,
			Buffer:     1,
			Stats:      &st,
			Heartbeat: func() {
				<-gate // the consumer is stuck in its first input
				handled.Add(1)
			},
		})
	}()
	// One input in the model, one in the queue, one in the hands of the
	// source's node, blocked on the full queue.
	const blocked = 50 * time.Millisecond
	s := waitFor(t, &st, "blocked", func(s Snapshot) bool {
		return nodeOf(s, SourceRuntime).Queued == 3 && nodeOf(s, SourceRuntime).Blocked >= blocked
	})
	if len(s.Nodes) != 1 || s.Nodes[0].Node != SourceRuntime {
		t.Errorf("nodes %+v, want only %s", s.Nodes, SourceRuntime)
	}
	close(gate)
	waitFor(t, &st, "drained", func(s Snapshot) bool { return nodeOf(s, SourceRuntime).Queued == 0 })
	if n := handled.Load(); n != sent {
		t.Errorf("%d inputs handled, want %d", n, sent)
	}
	if b := nodeOf(st.Snapshot(), SourceRuntime).Blocked; b < blocked {
		t.Errorf("blocked %v, want at least %v", b, blocked)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Facts the model holds back until a source's progress lets them through
// are its pending facts: kernel events while the API server's progress is
// awaited.
func TestStatsPendingFacts(t *testing.T) {
	t0 := time.Now()
	ev := func(d time.Duration) kernel.Event {
		return &kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Time: t0.Add(d), TGID: 1}}
	}
	var st Stats
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{
			Kernel:     &blockingSource{events: []kernel.Event{ev(time.Millisecond), ev(2 * time.Millisecond)}},
			Seed:       []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
			Correlator: correlate.New(correlate.Config{}),
			Tick:       time.Hour,
			Progress:   []string{fact.SourceAPI},
			Stats:      &st,
		})
	}()
	s := waitFor(t, &st, "pending", func(s Snapshot) bool { return s.PendingFacts == 2 })
	if k := nodeOf(s, SourceKernel); k.Queued != 0 || k.Blocked != 0 {
		t.Errorf("kernel node %+v: want nothing queued, never blocked", k)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The loop's own inputs (its ticks) say whether sources' inputs wait in the
// queue before them (fact.Input.Backlog): the model, behind, must not judge
// a source silent by a tick ahead of what that source already handed over.
// A model slower than its ticks drains a queue of source inputs: every tick
// handled before the last of them says so, every tick after it does not.
func TestTicksSayTheQueueIsBehind(t *testing.T) {
	const sent = 30
	t0 := time.Now()
	src := func(ctx context.Context, out chan<- fact.Input) error {
		for i := range sent {
			in := fact.Input{Time: t0.Add(time.Duration(i) * time.Millisecond), API: &fact.APIStatus{Available: true}}
			select {
			case out <- in:
			case <-ctx.Done():
				return nil
			}
		}
		<-ctx.Done()
		return nil
	}
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	var st Stats
	gate := make(chan struct{})
	var handled atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{
			Sources:    map[string]Source{SourceAPI: src},
			Correlator: correlate.New(correlate.Config{}),
			Record:     w,
			Tick:       2 * time.Millisecond,
			Buffer:     sent,
			Stats:      &st,
			Heartbeat: func() {
				if handled.Add(1) == 1 {
					<-gate // until every input is queued
				}
				// Slower than the ticks: one is due after each input.
				time.Sleep(5 * time.Millisecond)
			},
		})
	}()
	waitFor(t, &st, "queued", func(s Snapshot) bool { return nodeOf(s, SourceAPI).Queued >= sent-1 })
	close(gate)
	waitFor(t, &st, "drained", func(s Snapshot) bool { return nodeOf(s, SourceAPI).Queued == 0 })
	// The last input waited for the 29 before it, 5 ms each at least:
	// one input at least waited over 100 ms, and every one was counted.
	d := nodeOf(st.Snapshot(), SourceAPI).Delay
	if d.Count != sent || d.Buckets[3] == sent || d.Sum < 145*time.Millisecond {
		t.Errorf("delays %+v: want %d counted, one at least over %v (bucket 3), summing to 145ms at least", d, sent, DelayBounds[3])
	}
	time.Sleep(30 * time.Millisecond) // ticks after the drain
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	in, err := record.ReadAll(&buf)
	if err != nil {
		t.Fatal(err)
	}
	last := -1
	for i, x := range in {
		if x.API != nil {
			last = i
		}
	}
	var behind, after int
	for i, x := range in {
		switch {
		case !x.Tick:
		case i < last && !x.Backlog:
			t.Errorf("input %d: a tick before the queue drained (input %d) without Backlog", i, last)
		case i < last:
			behind++
		case x.Backlog:
			t.Errorf("input %d: a tick after the queue drained (input %d) with Backlog", i, last)
		default:
			after++
		}
	}
	// 29 inputs handled with a tick due after each: a tick goes first in
	// half of the loop's choices, so none before the drain is 2^-28.
	if behind == 0 || after == 0 {
		t.Errorf("%d ticks behind the queue, %d after it drained: want both", behind, after)
	}
	t.Logf("%d inputs; ticks: %d behind the queue, %d after", len(in), behind, after)
}
