package correlate

import (
	"sort"
	"time"

	"github.com/podtrace/podtrace/internal/cri"
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
// behaviour, where settle windows bound the wait). A stream without any
// progress (recordings made before progress existed) is handled in arrival
// order, as it always was.

// sourceTracer: inputs the tracer makes itself at its own time, handled in
// order with the sources' (the kernel's loss counters, read on ticks).
const sourceTracer = "tracer"

// staleAfter: a source that reported progress but has reported none for this
// long (arrival time) is taken as down, and no longer waited for.
const staleAfter = 10 * time.Second

type sequencer struct {
	marks   map[string]time.Time // latest Progress.Until per source
	markAt  map[string]time.Time // arrival time of that mark
	down    map[string]bool      // reported unavailable
	lastKey map[string]time.Time // keys never decrease within a source
	pending []pendingInput       // sorted by (key, rank, seq)
	seq     uint64
	arrived time.Time // latest arrival time (Input.Time)
	grid    time.Time // the next timer point of the model's clock
}

type pendingInput struct {
	in   Input
	src  string
	key  time.Time
	rank int
	seq  uint64
}

// sourceRank orders facts of the same time: the API server's word (a
// deletion, an eviction) before the kernel's facts that follow from it, the
// runtime's poll, which reports what already happened, last.
func sourceRank(src string) int {
	switch src {
	case SourceAPI:
		return 0
	case SourceKernel:
		return 1
	case SourceRuntime:
		return 2
	}
	return 3
}

// inputSource names the source an input comes from ("" for the tracer's own:
// start, the start-up scan, ticks).
func inputSource(in Input) string {
	switch {
	case in.Losses != nil:
		// Read by the tracer from the kernel's counters, at its time.
		return sourceTracer
	case in.Kernel != nil:
		return SourceKernel
	case in.Runtime != nil:
		return SourceRuntime
	case in.Pod != nil, in.Event != nil, in.API != nil:
		return SourceAPI
	case in.Progress != nil:
		return in.Progress.Source
	}
	return ""
}

// sequencing reports whether any source reports progress.
func (s *sequencer) sequencing() bool { return len(s.marks) > 0 }

// waited reports whether the model waits for src's progress.
func (s *sequencer) waited(src string) bool {
	at, ok := s.markAt[src]
	return ok && !s.down[src] && s.arrived.Sub(at) <= staleAfter
}

// watermark is the time up to which every waited-for source is complete
// (ok false when none is waited for).
func (s *sequencer) watermark() (w time.Time, ok bool) {
	for src, m := range s.marks {
		if !s.waited(src) {
			continue
		}
		if !ok || m.Before(w) {
			w, ok = m, true
		}
	}
	return w, ok
}

// key is the input's time in its source's own order.
func (s *sequencer) key(in Input, src string) time.Time {
	var k time.Time
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
	if last := s.lastKey[src]; k.Before(last) {
		k = last
	}
	s.lastKey[src] = k
	return k
}

func (s *sequencer) push(p pendingInput) {
	i := sort.Search(len(s.pending), func(i int) bool {
		q := s.pending[i]
		if !q.key.Equal(p.key) {
			return q.key.After(p.key)
		}
		if q.rank != p.rank {
			return q.rank > p.rank
		}
		return q.seq > p.seq
	})
	s.pending = append(s.pending, pendingInput{})
	copy(s.pending[i+1:], s.pending[i:])
	s.pending[i] = p
}

// ready reports whether the first pending input can be handled: every other
// waited-for source is complete past its key (a source's facts still to
// come are at or after its mark: one at the very key would go first if its
// source ranks first).
func (s *sequencer) ready(p pendingInput) bool {
	for src, m := range s.marks {
		if src == p.src || !s.waited(src) {
			continue
		}
		if !m.After(p.key) {
			return false // a fact of src at p.key may still come
		}
	}
	return true
}

// noteArrival tracks what an input says about its source's state (marks,
// availability) as soon as it arrives.
func (s *sequencer) noteArrival(in Input) {
	if in.Time.After(s.arrived) {
		s.arrived = in.Time
	}
	switch {
	case in.Progress != nil:
		src := in.Progress.Source
		if m, ok := s.marks[src]; !ok || in.Progress.Until.After(m) {
			s.marks[src] = in.Progress.Until
		}
		s.markAt[src] = in.Time
	case in.Start != nil:
		// The sources that will report progress are waited for from the
		// start, before their first report.
		for _, src := range in.Start.Progress {
			if _, ok := s.marks[src]; !ok {
				s.marks[src] = time.Time{}
				s.markAt[src] = in.Time
			}
		}
	case in.Runtime != nil && in.Runtime.Type == cri.EventRuntimeUnavailable:
		s.down[SourceRuntime] = true
	case in.Runtime != nil && in.Runtime.Type == cri.EventRuntimeAvailable:
		s.down[SourceRuntime] = false
	case in.API != nil:
		s.down[SourceAPI] = !in.API.Available
	}
}

// sequence takes an input in arrival order and handles what is due, in key
// order.
func (c *Correlator) sequence(in Input) {
	s := &c.seq
	s.noteArrival(in)
	if !s.sequencing() {
		c.apply(in)
		return
	}
	src := inputSource(in)
	switch {
	case in.Progress != nil, in.Tick:
		// Time passes: as far as every waited-for source is complete.
	case src == "":
		// The tracer's own inputs (start, the start-up scan) come first.
		c.advance(in.Time)
		c.apply(in)
	default:
		s.seq++
		s.push(pendingInput{in: in, src: src, key: s.key(in, src), rank: sourceRank(src), seq: s.seq})
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
	n := 0
	for n < len(s.pending) {
		p := s.pending[n]
		if !force && !s.ready(p) {
			break
		}
		n++
		c.advance(p.key)
		p.in.Time = c.now
		c.apply(p.in)
	}
	if n > 0 {
		s.pending = append(s.pending[:0], s.pending[n:]...)
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
	return c.apiKnown && c.apiUp || c.seq.waited(SourceAPI)
}
