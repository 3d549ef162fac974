package correlate

import (
	"sort"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/fact/cri"
)

// Independent of timing.
//
// The three sources deliver their facts each in its own order, but how late
// one is against the others depends on the machine: the ring buffer reader
// lags under an exec storm, a runtime poll takes seconds, an API watch
// stalls. The model must not depend on that: a container's end must not be
// decided before the runtime had its say about it, a pod must not be
// declared gone before the kernel reported its last exits, an exit the
// runtime reports must not overtake the kernel's exec of that container.
//
// Sources that can say so report progress (Input.Progress): their view is
// complete up to a time, a watermark. While some source reports progress,
// the model sequences its inputs: each input gets a key, its source's own
// time for the fact (the kernel event's time, the runtime poll's snapshot
// time, the API watch's delivery time; never decreasing within a source, so
// a source's own order is kept), and is handled only once every other
// source that is waited for has reported progress past that key. Inputs are
// handled in key order, so facts from different sources interleave the same
// way however late each arrived, and the model's clock (timers, settle
// windows) is the key of what it handles, not the arrival time: timers run
// at fixed points of that clock before the facts after them.
//
// A source is waited for once it has reported progress, and as long as it
// is up: a runtime reported unavailable, an API server reported down, or a
// source silent for staleAfter of arrival time, is not waited for (its late
// facts are taken as they come, as before progress existed: the degraded
// behaviour, where settle windows bound the wait). Silence is judged on the
// sources' own stamps: the tracer's inputs made while the sources' inputs
// still wait in the queue before them (Input.Backlog: a model behind a
// flood, or starved of CPU) are ahead of those by the model's lag, not by
// any source's silence, and do not count. A stream without any
// progress (recordings made before progress existed) is handled in arrival
// order, as it always was.

// sourceTracer: inputs the tracer makes itself at its own time, handled in
// order with the sources' (the kernel's loss counters, read on ticks).
const sourceTracer = "tracer"

// staleAfter: a source that reported progress but has reported none for this
// long (arrival time, as heard: see sequencer.heard) is taken as down, and
// no longer waited for.
const staleAfter = 10 * time.Second

// Source slots of the sequencer, in rank order: facts of the same time go
// the API server's word (a deletion, an eviction) first, then the kernel's
// facts that follow from it, then the runtime's poll, which reports what
// already happened, then the tracer's own.
const (
	slotAPI = iota
	slotKernel
	slotRuntime
	slotTracer
	nSlots
	slotNone = -1
)

// afterProgress: the miss of a fact older than its source's progress mark,
// by slot (the tracer's own inputs are never tracked, never late).
var afterProgress = [nSlots]names.Miss{slotAPI: names.MissAPIAfterProgress, slotKernel: names.MissKernelAfterProgress, slotRuntime: names.MissRuntimeAfterProgress}

func slotOf(src string) int {
	switch src {
	case fact.SourceAPI:
		return slotAPI
	case fact.SourceKernel:
		return slotKernel
	case fact.SourceRuntime:
		return slotRuntime
	case sourceTracer:
		return slotTracer
	}
	return slotNone
}

// sourceState is what the sequencer knows of one source.
type sourceState struct {
	tracked bool      // reports progress (declared, or has reported)
	mark    time.Time // latest fact.Progress.Until
	markAt  time.Time // arrival time of that mark (or of the declaration)
	down    bool      // reported unavailable
	lastKey time.Time // keys never decrease within a source
}

type sequencer struct {
	src      [nSlots]sourceState
	tracking bool           // some source reports progress
	pending  []pendingInput // pending[head:], sorted by (key, slot, seq)
	head     int
	seq      uint64
	arrived  time.Time // latest arrival time (fact.Input.Time)
	// heard: the latest arrival time of an input not made behind a
	// backlog (fact.Input.Backlog): the clock a source's silence is
	// judged on. A source's input is never behind its own queue.
	heard time.Time
	grid  time.Time // the next timer point of the model's clock
}

type pendingInput struct {
	in   fact.Input
	slot int
	key  time.Time
	seq  uint64
}

// inputSlot tells the source an input comes from (slotNone for the
// tracer's own start, start-up scan and ticks, and for progress).
func inputSlot(in fact.Input) int {
	switch {
	case in.Losses != nil:
		// Read by the tracer from the kernel's counters, at its time.
		return slotTracer
	case in.Kernel != nil:
		return slotKernel
	case in.Runtime != nil:
		return slotRuntime
	case in.Pod != nil, in.Event != nil, in.Endpoint != nil, in.API != nil:
		return slotAPI
	}
	return slotNone
}

// sequencing reports whether any source reports progress.
func (s *sequencer) sequencing() bool { return s.tracking }

// Pending is how many inputs the model holds until their sources' progress
// lets it handle them in order.
func (c *Correlator) Pending() int { return len(c.seq.pending) - c.seq.head }

// waited reports whether the model waits for the source's progress.
func (s *sequencer) waited(slot int) bool {
	st := &s.src[slot]
	return st.tracked && !st.down && s.heard.Sub(st.markAt) <= staleAfter
}

// watermark is the time up to which every waited-for source is complete
// (ok false when none is waited for).
func (s *sequencer) watermark() (w time.Time, ok bool) {
	for i := range s.src {
		if !s.waited(i) {
			continue
		}
		if m := s.src[i].mark; !ok || m.Before(w) {
			w, ok = m, true
		}
	}
	return w, ok
}

// key is the input's time in its source's own order; late: the fact is
// older than its own source's progress said it was complete (its time
// before the source's mark): the model may have decided without it.
func (s *sequencer) key(in fact.Input, slot int) (k time.Time, late bool) {
	switch {
	case in.Kernel != nil:
		k = in.Kernel.Hdr().Time
	case in.Runtime != nil:
		k = in.Runtime.Observed
		if k.IsZero() {
			k = in.Runtime.At
		}
	default:
		k = in.Time
	}
	if k.IsZero() {
		k = in.Time
	}
	st := &s.src[slot]
	late = st.tracked && !st.mark.IsZero() && k.Before(st.mark)
	if k.Before(st.lastKey) {
		k = st.lastKey
	}
	st.lastKey = k
	return k, late
}

func (s *sequencer) push(p pendingInput) {
	q := s.pending[s.head:]
	// Keys mostly grow: look from the end.
	if n := len(q); n == 0 || !less(p, q[n-1]) {
		s.pending = append(s.pending, p)
		return
	}
	i := s.head + sort.Search(len(q), func(i int) bool { return less(p, q[i]) })
	s.pending = append(s.pending, pendingInput{})
	copy(s.pending[i+1:], s.pending[i:])
	s.pending[i] = p
}

// less orders pending inputs: by key, then source (slot order), then
// arrival.
func less(a, b pendingInput) bool {
	if !a.key.Equal(b.key) {
		return a.key.Before(b.key)
	}
	if a.slot != b.slot {
		return a.slot < b.slot
	}
	return a.seq < b.seq
}

// ready reports whether the first pending input can be handled: every other
// waited-for source is complete past its key (a source's facts still to
// come are at or after its mark: one at the very key would go first if its
// source ranks first).
func (s *sequencer) ready(p pendingInput) bool {
	for i := range s.src {
		if i == p.slot || !s.waited(i) {
			continue
		}
		if !s.src[i].mark.After(p.key) {
			return false // a fact of that source at p.key may still come
		}
	}
	return true
}

// noteArrival tracks what an input says about its source's state (marks,
// availability) as soon as it arrives.
func (s *sequencer) noteArrival(in fact.Input) {
	if in.Time.After(s.arrived) {
		s.arrived = in.Time
	}
	if !in.Backlog && in.Time.After(s.heard) {
		s.heard = in.Time
	}
	switch {
	case in.Progress != nil:
		slot := slotOf(in.Progress.Source)
		if slot == slotNone || slot == slotTracer {
			return
		}
		st := &s.src[slot]
		if !st.tracked || in.Progress.Until.After(st.mark) {
			st.mark = in.Progress.Until
		}
		st.tracked, st.markAt, s.tracking = true, in.Time, true
	case in.Start != nil:
		// The sources that will report progress are waited for from the
		// start, before their first report.
		for _, src := range in.Start.Progress {
			if slot := slotOf(src); slot != slotNone && slot != slotTracer && !s.src[slot].tracked {
				s.src[slot] = sourceState{tracked: true, markAt: in.Time}
				s.tracking = true
			}
		}
	case in.Runtime != nil && in.Runtime.Type == cri.EventRuntimeUnavailable:
		s.src[slotRuntime].down = true
	case in.Runtime != nil && in.Runtime.Type == cri.EventRuntimeAvailable:
		s.src[slotRuntime].down = false
	case in.API != nil:
		s.src[slotAPI].down = !in.API.Available
	}
}

// sequence takes an input in arrival order and handles what is due, in key
// order.
func (c *Correlator) sequence(in fact.Input) {
	s := &c.seq
	s.noteArrival(in)
	if !s.sequencing() {
		c.apply(in)
		return
	}
	slot := inputSlot(in)
	switch {
	case in.Progress != nil, in.Tick:
		// Time passes: as far as every waited-for source is complete.
	case slot == slotNone:
		// The tracer's own inputs (start, the start-up scan) come first.
		c.advance(in.Time)
		c.apply(in)
	default:
		s.seq++
		key, late := s.key(in, slot)
		if late {
			// A source's progress broken: the kernel's record stamped
			// more than the reader's drain margin before it was
			// committed (a vCPU stolen between the two), an API fact
			// stamped more than the watch's margin before it was
			// handed over.
			c.miss(afterProgress[slot])
		}
		s.push(pendingInput{in: in, slot: slot, key: key, seq: s.seq})
	}
	c.release(false)
	w, ok := s.watermark()
	if !ok {
		w = s.arrived // nothing to wait for: time is the arrival time
	}
	c.advance(w)
}

// release handles the pending inputs that are due, in key order (all of
// them when force).
func (c *Correlator) release(force bool) {
	s := &c.seq
	for s.head < len(s.pending) {
		p := s.pending[s.head]
		if !force && !s.ready(p) {
			break
		}
		s.pending[s.head] = pendingInput{} // let it go
		s.head++
		c.advance(p.key)
		p.in.Time = c.now
		c.apply(p.in)
	}
	switch {
	case s.head == len(s.pending):
		s.pending, s.head = s.pending[:0], 0
	case s.head > 1024 && s.head > len(s.pending)/2:
		n := copy(s.pending, s.pending[s.head:])
		s.pending, s.head = s.pending[:n], 0
	}
}

// advance moves the model's clock to t, running the timers at every
// timerEvery point on the way (one run for a long quiet gap), before any
// fact after them.
func (c *Correlator) advance(t time.Time) {
	s := &c.seq
	if s.grid.IsZero() {
		s.grid = t.Truncate(timerEvery).Add(timerEvery)
	}
	if !t.Before(s.grid) {
		last := t.Truncate(timerEvery)
		if last.Sub(s.grid) > timerEvery {
			s.grid = last
		}
		for !s.grid.After(t) {
			if s.grid.After(c.now) {
				c.now = s.grid
			}
			c.tick()
			s.grid = s.grid.Add(timerEvery)
		}
	}
	if t.After(c.now) {
		c.now = t
	}
}

// apiExpected reports whether the API server's view of pods is to be
// expected: it said it is up, or its watch reports progress and is not down.
// A pod without API facts then waits for them (they may just be late)
// rather than being taken as unknown to the API server.
func (c *Correlator) apiExpected() bool {
	return c.apiKnown && c.apiUp || c.seq.waited(slotAPI)
}
