package pipeline

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/correlate"
	criclient "github.com/podchron/podchron/internal/cri"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/record"
)

// blockingSource returns its events, then waits for ctx.
type blockingSource struct {
	events []kernel.Event
	i      int
}

func (s *blockingSource) Next(ctx context.Context) (kernel.Event, error) {
	if s.i < len(s.events) {
		s.i++
		return s.events[s.i-1], nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}
func (s *blockingSource) Close() error { return nil }

// Pending: the ring buffer is drained once every event was returned.
func (s *blockingSource) Pending() int { return len(s.events) - s.i }

func readAll(t *testing.T, b []byte) []fact.Input {
	t.Helper()
	out, err := record.ReadAll(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The pipeline declares the sources that report progress in the start
// input, and reports the kernel's own once the reader is idle: marks that
// only grow and are never after a kernel event still to come.
func TestKernelProgress(t *testing.T) {
	t0 := time.Now()
	ev := func(d time.Duration) kernel.Event {
		return &kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Time: t0.Add(d), TGID: 1}}
	}
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = Run(ctx, Config{
		Kernel:     &blockingSource{events: []kernel.Event{ev(0), ev(time.Millisecond)}},
		Seed:       []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
		Correlator: correlate.New(correlate.Config{}),
		Record:     w,
		// The model's tick never comes: the kernel's progress has its own
		// cadence (a quiet kernel at the tracer's 500 ms ticks held the
		// runtime's exit of a container up to a second).
		Tick:            time.Hour,
		KernelIdleEvery: 20 * time.Millisecond,
		Progress:        []string{fact.SourceKernel, fact.SourceAPI},
		KernelDrain:     10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	in := readAll(t, buf.Bytes())
	if st := in[0].Start; st == nil || len(st.Progress) != 2 || st.Progress[0] != fact.SourceKernel || st.Progress[1] != fact.SourceAPI {
		t.Fatalf("start: %+v", in[0])
	}
	var marks int
	var last time.Time
	for i, x := range in {
		p := x.Progress
		if p == nil {
			continue
		}
		marks++
		if p.Source != fact.SourceKernel || !p.Until.After(last) || p.Until.After(x.Time.Add(-10*time.Millisecond)) {
			t.Errorf("mark %d: %+v at %s (previous %s)", i, p, x.Time, last)
		}
		last = p.Until
		for _, y := range in[i+1:] {
			if y.Kernel != nil && y.Kernel.Hdr().Time.Before(p.Until) {
				t.Errorf("kernel event at %s after the mark %s", y.Kernel.Hdr().Time, p.Until)
			}
		}
	}
	if marks < 3 {
		t.Errorf("%d kernel marks in 300 ms of 20 ms idle checks", marks)
	}
}

// The runtime's progress is the snapshot time of its latest poll, once
// that poll's changes were all handed over; a poll with no change counts.
func TestRuntimeSourceProgress(t *testing.T) {
	t0 := time.Now()
	events := make(chan cri.Event, 8)
	var mu sync.Mutex
	var snap *criclient.Snapshot
	latest := func() *criclient.Snapshot { mu.Lock(); defer mu.Unlock(); return snap }
	poll := func(at time.Time, evs ...cri.Event) {
		for _, e := range evs {
			events <- e
		}
		mu.Lock()
		snap = &criclient.Snapshot{Time: at}
		mu.Unlock()
	}
	out := make(chan fact.Input, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RuntimeSource(events, latest, NewPace(5*time.Millisecond, 5*time.Millisecond), nil)(ctx, out)
	}()
	poll(t0, cri.Event{Type: cri.EventContainerCreated, At: t0.Add(-time.Second), Observed: t0, Container: &cri.Container{ID: "c1"}})
	time.Sleep(50 * time.Millisecond)
	poll(t0.Add(time.Second)) // nothing new
	time.Sleep(50 * time.Millisecond)
	cancel()
	<-done
	close(out)
	var got []string
	for in := range out {
		switch {
		case in.Runtime != nil:
			got = append(got, "event")
		case in.Progress != nil:
			got = append(got, in.Progress.Until.Sub(t0).String())
		}
	}
	// The first poll's mark can be skipped by a slow ticker, not the
	// event, nor the last poll's.
	if l := fmtList(got); l != "[event 0s 1s]" && l != "[event 1s]" {
		t.Errorf("got %s, want [event 0s 1s]", l)
	}
}

// A source stamped as it sends (the API watcher) reports progress while it
// has nothing in flight.
func TestWithProgress(t *testing.T) {
	out := make(chan fact.Input, 64)
	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Now()
	src := func(ctx context.Context, out chan<- fact.Input) error {
		out <- fact.Input{Time: time.Now(), API: &fact.APIStatus{Available: true}}
		<-ctx.Done()
		return nil
	}
	done := make(chan error, 1)
	go func() {
		done <- WithProgress(fact.SourceAPI, src, NewPace(5*time.Millisecond, 5*time.Millisecond), time.Millisecond, nil)(ctx, out)
	}()
	time.Sleep(60 * time.Millisecond)
	cancel()
	<-done
	close(out)
	var facts, marks int
	var last time.Time
	for in := range out {
		switch {
		case in.API != nil:
			facts++
			if in.Time.Before(last) {
				t.Errorf("a fact at %s after a mark at %s", in.Time, last)
			}
		case in.Progress != nil:
			marks++
			if in.Progress.Source != fact.SourceAPI || !in.Progress.Until.After(last) || in.Progress.Until.Before(t0) {
				t.Errorf("mark %+v", in.Progress)
			}
			last = in.Progress.Until
		}
	}
	if facts != 1 || marks < 3 {
		t.Errorf("%d facts, %d marks", facts, marks)
	}
}

func fmtList(s []string) string {
	var b bytes.Buffer
	b.WriteString("[")
	for i, x := range s {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(x)
	}
	b.WriteString("]")
	return b.String()
}

// A reader that waits proves nothing by itself (on a loaded machine it may
// not have run while events piled up): the kernel is complete up to a tick
// only if the ring buffer was empty then and the reader still waits in the
// same wait at the next tick.
func TestKernelIdleCheck(t *testing.T) {
	t0 := time.Now()
	tick := func(i int) time.Time { return t0.Add(time.Duration(i) * 100 * time.Millisecond) }
	var k idleCheck
	empty, full := func() int { return 0 }, func() int { return 64 }
	steps := []struct {
		wait    uint64
		queued  bool
		pending func() int
		want    time.Time // zero: no mark
	}{
		{7, false, full, time.Time{}},  // waiting, but events sit in the buffer
		{7, false, empty, time.Time{}}, // drained: a candidate
		{7, false, empty, tick(1)},     // same wait: complete to the candidate
		{8, false, empty, time.Time{}}, // it read something since: new candidate
		{0, false, empty, time.Time{}}, // handing an event over
		{9, true, empty, time.Time{}},  // events read, not handled yet
		{9, false, empty, time.Time{}}, // candidate
		{9, false, full, tick(6)},      // complete to the candidate, not beyond
		{9, false, empty, time.Time{}}, // the buffer filled at the last tick: no mark from it
	}
	for i, st := range steps {
		got, ok := k.check(tick(i), st.wait, st.queued, st.pending)
		if ok != !st.want.IsZero() || ok && !got.Equal(st.want) {
			t.Errorf("tick %d: got %v %v, want %v", i, got.Sub(t0), ok, st.want.Sub(t0))
		}
	}
}

// Another source flooding the input channel does not stop the kernel's
// progress: what counts is that every kernel event read was handled.
func TestKernelProgressUnderFlood(t *testing.T) {
	t0 := time.Now()
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	flood := func(ctx context.Context, out chan<- fact.Input) error {
		for ctx.Err() == nil {
			select {
			case out <- fact.Input{Time: time.Now(), Event: &fact.K8sEvent{UID: "e", PodUID: "p", Reason: "x", Count: 1}}:
			case <-ctx.Done():
			}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = Run(ctx, Config{
		Kernel:      &blockingSource{events: []kernel.Event{&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Time: t0, TGID: 1}}}},
		Seed:        []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
		Sources:     map[string]Source{"flood": flood},
		Correlator:  correlate.New(correlate.Config{}),
		Record:      w,
		Tick:        20 * time.Millisecond,
		Buffer:      4,
		Progress:    []string{fact.SourceKernel},
		KernelDrain: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	var marks int
	for _, x := range readAll(t, buf.Bytes()) {
		if x.Progress != nil {
			marks++
		}
	}
	if marks < 3 {
		t.Errorf("%d kernel marks in 300 ms of 20 ms ticks under a flood", marks)
	}
}

// flowSource returns an event every 5 ms, stamped when returned; its ring
// buffer never looks empty.
type flowSource struct{}

func (flowSource) Next(ctx context.Context) (kernel.Event, error) {
	select {
	case <-time.After(5 * time.Millisecond):
		return &kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Time: time.Now(), TGID: 1}}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
func (flowSource) Close() error { return nil }
func (flowSource) Pending() int { return 1 }

// While events flow the reader is never idle for a tick: the kernel's
// progress comes from the order of the ring buffer (each event handed over
// vouches for those stamped before it), spaced by kernelMarkEvery.
func TestKernelProgressWhileEventsFlow(t *testing.T) {
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	err = Run(ctx, Config{
		Kernel:      flowSource{},
		Seed:        []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
		Correlator:  correlate.New(correlate.Config{}),
		Record:      w,
		Tick:        20 * time.Millisecond,
		Progress:    []string{fact.SourceKernel},
		KernelDrain: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	in := readAll(t, buf.Bytes())
	var marks int
	var last time.Time
	for i, x := range in {
		p := x.Progress
		if p == nil {
			continue
		}
		marks++
		if !p.Until.After(last) {
			t.Errorf("mark %d does not advance: %s after %s", i, p.Until, last)
		}
		last = p.Until
		for _, y := range in[i+1:] {
			if y.Kernel != nil && y.Kernel.Hdr().Time.Before(p.Until) {
				t.Errorf("kernel event at %s after the mark %s", y.Kernel.Hdr().Time, p.Until)
			}
		}
	}
	if marks < 2 || marks > 7 {
		t.Errorf("%d kernel marks in 500 ms of flowing events (one per %s)", marks, kernelMarkEvery)
	}
}

// A watched exit of a pid namespace's init kicks the runtime source once;
// other exits (a process inside a container, an unwatched init) do not.
func TestContainerInitExitKicksTheRuntime(t *testing.T) {
	t0 := time.Now()
	exit := func(tgid uint32, origin kernel.Origin, nsInit bool) kernel.Event {
		return &kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Time: t0, TGID: tgid, Origin: origin}, NSInit: nsInit}
	}
	for _, tc := range []struct {
		name  string
		evs   []kernel.Event
		kicks int
	}{
		{"container init", []kernel.Event{exit(10, kernel.OriginWatched, true)}, 1},
		{"a container's child process", []kernel.Event{exit(11, kernel.OriginWatched, false)}, 0},
		{"an init outside the watched cgroups", []kernel.Event{exit(12, kernel.OriginRuntime, true)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kick := make(chan struct{}, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := Run(ctx, Config{
				Kernel:      &blockingSource{events: tc.evs},
				Seed:        []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
				Correlator:  correlate.New(correlate.Config{}),
				Tick:        20 * time.Millisecond,
				RuntimeKick: kick,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(kick); got != tc.kicks {
				t.Errorf("%d kicks, want %d", got, tc.kicks)
			}
		})
	}
}

// A pod update from the API server asks the runtime source for one poll
// (the model holds it until the runtime's progress passes its time); the
// kernel's events and a pod's Events do not.
func TestPodUpdateAsksTheRuntimeForAPoll(t *testing.T) {
	t0 := time.Now()
	pod := fact.Input{Time: t0, Pod: &fact.PodInfo{UID: "u1", Name: "p", Namespace: "ns", Phase: "Running"}}
	event := fact.Input{Time: t0, Event: &fact.K8sEvent{PodUID: "u1", Reason: "Killing"}}
	for _, tc := range []struct {
		name string
		api  []fact.Input
		want int
	}{
		{"a pod update", []fact.Input{pod}, 1},
		{"two pod updates before the poll is taken: one request", []fact.Input{pod, pod}, 1},
		{"an Event about the pod", []fact.Input{event}, 0},
		{"no API input", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ask := make(chan struct{}, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			err := Run(ctx, Config{
				Kernel: &blockingSource{events: []kernel.Event{&kernel.ExitEvent{Header: kernel.Header{Type: kernel.EventExit, Time: t0, TGID: 10, Origin: kernel.OriginWatched}}}},
				Sources: map[string]Source{SourceAPI: func(ctx context.Context, out chan<- fact.Input) error {
					for _, in := range tc.api {
						out <- in
					}
					<-ctx.Done()
					return nil
				}},
				Seed:        []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
				Correlator:  correlate.New(correlate.Config{}),
				Tick:        20 * time.Millisecond,
				RuntimePoll: ask,
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := len(ask); got != tc.want {
				t.Errorf("%d poll requests, want %d", got, tc.want)
			}
		})
	}
}

// The kernel's idle check runs at its quiet pace while the model waits for
// nothing, and goes fast once the model holds an input for the kernel's
// progress: checked at once, the input is released a fast check later, not
// a quiet one (here an hour: without the switch it would never be).
func TestKernelIdlePace(t *testing.T) {
	t0 := time.Now()
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	send := make(chan fact.Input)
	stats := &Stats{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, Config{
			Kernel: &blockingSource{},
			Sources: map[string]Source{SourceRuntime: func(ctx context.Context, out chan<- fact.Input) error {
				for {
					select {
					case in := <-send:
						out <- in
					case <-ctx.Done():
						return nil
					}
				}
			}},
			Seed:            []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
			Correlator:      correlate.New(correlate.Config{}),
			Record:          w,
			Stats:           stats,
			Tick:            time.Hour,
			KernelIdleEvery: 10 * time.Millisecond,
			Progress:        []string{fact.SourceKernel},
			KernelDrain:     time.Millisecond,
		})
	}()
	// The start is a fact: fast until the model's first timers ran (250 ms
	// of the kernel's progress), then quiet.
	time.Sleep(time.Second)
	sent := time.Now()
	send <- fact.Input{Time: sent, Runtime: &cri.Event{Type: cri.EventContainerStarted, At: sent,
		Container: &cri.Container{ID: "c1", PodUID: "u1", Name: "app", StartedAt: sent}}}
	waitHandled(t, stats, sent, 10*time.Second, 100*time.Millisecond, "")
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var before, after []fact.Input
	var got bool
	for _, x := range readAll(t, buf.Bytes()) {
		switch {
		case x.Runtime != nil:
			got = true
		case x.Progress != nil && !got:
			before = append(before, x)
		case x.Progress != nil:
			after = append(after, x)
		}
	}
	if !got {
		t.Fatal("the runtime's input was not handled")
	}
	if len(before) == 0 {
		t.Fatal("no kernel mark after the start: the idle check was not fast while the model waited")
	}
	if gap := sent.Sub(before[len(before)-1].Time); gap < 500*time.Millisecond {
		t.Errorf("the idle check was not quiet before the input: %d marks, the last %s before it", len(before), gap)
	}
	if len(after) == 0 || !after[len(after)-1].Progress.Until.After(sent) {
		t.Errorf("no kernel mark past the held input (%d marks after it)", len(after))
	}
}

// While the model waits for nothing, the kernel's idle check rides the
// tick: each quiet mark is made just before a tick, and no timer of its own
// wakes the tracer between ticks (bench/idle.sh).
func TestKernelIdleCheckRidesTheTick(t *testing.T) {
	t0 := time.Now()
	var buf bytes.Buffer
	w, err := record.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err = Run(ctx, Config{
		Kernel:          &blockingSource{},
		Seed:            []fact.Input{{Time: t0, Start: &fact.Start{At: t0}}},
		Correlator:      correlate.New(correlate.Config{}),
		Record:          w,
		Tick:            100 * time.Millisecond,
		KernelIdleEvery: 10 * time.Millisecond,
		Progress:        []string{fact.SourceKernel},
		KernelDrain:     time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	// The start's timers are done well before 700 ms (fast checks, 10 ms
	// apart); from then on the model waits for nothing.
	in := readAll(t, buf.Bytes())
	var marks, beforeTick int
	for i, x := range in {
		if x.Progress == nil || x.Time.Sub(t0) < 700*time.Millisecond {
			continue
		}
		marks++
		if i+1 < len(in) && in[i+1].Tick {
			beforeTick++
		}
	}
	if marks < 4 {
		t.Errorf("%d quiet kernel marks in the last 0.8 s, want one a tick (100 ms)", marks)
	}
	if beforeTick != marks {
		t.Errorf("%d of %d quiet kernel marks made just before a tick: the idle check has a timer of its own", beforeTick, marks)
	}
}

// waitHandled waits until the model holds no input, at least settle after
// an input was sent at sent, and fails the test (with why, if given) when
// one is still held within.
func waitHandled(t *testing.T, stats *Stats, sent time.Time, within, settle time.Duration, why string) {
	t.Helper()
	for deadline := time.Now().Add(within); ; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the runtime's input still held %s later (%d pending)%s", within, stats.Snapshot().PendingFacts, why)
		}
		if stats.Snapshot().PendingFacts == 0 && time.Since(sent) > settle {
			return
		}
	}
}
