// Package clock is podchron's one timeline: the kernel's boot clock
// (CLOCK_BOOTTIME: it never steps, and it counts suspend), shown as
// wall-clock time from an epoch fixed when the tracer starts. Kernel events
// (stamped by the kernel from the boot clock) and every input's receive
// time (fact.Input.Time, which drives the model's timers) are placed on
// it directly; the other sources' wall-clock times are mapped onto it:
//
//   - the node's wall clock (the runtime's created/started/finished times,
//     the kubelet's Event and condition times) by the step the node's wall
//     clock has taken since the start, re-measured periodically (Remeasure);
//   - the API server's wall clock (creationTimestamp, deletionTimestamp) by
//     an offset measured from the facts the watch delivers (APIOffset).
//
// So a step of the node's wall clock (NTP, an operator's date) moves no
// span and fires no timer early or late, and a node clock behind the API
// server's does not put a pod's deletion after the stop signals it caused.
// At the start the timeline is the wall clock, so the exported times still
// read as wall-clock times; after a step they stay the times the clock
// showed before it (what a wall clock that never stepped would show).
package clock

import (
	"sync/atomic"
	"time"
)

// Source reads the two clocks: the boot clock since boot and the wall
// clock. The system's is System; tests inject their own.
type Source interface {
	Boot() time.Duration
	Real() time.Time
}

// Timeline is the tracer's timeline: epoch + boot clock. Its methods are
// safe for concurrent use (the sources' goroutines map their facts while
// the pipeline re-measures).
type Timeline struct {
	src Source
	// epoch is realtime - boottime (ns since the Unix epoch) measured at
	// New: never moved afterwards.
	epoch int64
	// step is realtime - boottime - epoch at the last Remeasure: how far
	// the node's wall clock has stepped since the start.
	step atomic.Int64
	// API is the measured offset of the API server's clock.
	API APIOffset
}

// New fixes the timeline's epoch from src now.
func New(src Source) *Timeline {
	return &Timeline{src: src, epoch: offset(src)}
}

// offset measures realtime - boottime, keeping the reading with the
// narrowest bracket of three (a preemption between the reads widens it).
func offset(src Source) int64 {
	best := time.Duration(-1)
	var off int64
	for range 3 {
		b1 := src.Boot()
		r := src.Real()
		b2 := src.Boot()
		if w := b2 - b1; best < 0 || w < best {
			best = w
			off = r.UnixNano() - int64(b1+(b2-b1)/2)
		}
	}
	return off
}

// Now is the timeline's present: epoch + the boot clock now.
func (t *Timeline) Now() time.Time { return time.Unix(0, t.epoch+int64(t.src.Boot())) }

// Wall is a kernel CLOCK_BOOTTIME stamp (ns) on the timeline (zero for 0).
// It makes Timeline the kernel decoder's clock (event.Clock).
func (t *Timeline) Wall(bootNS uint64) time.Time {
	if bootNS == 0 {
		return time.Time{}
	}
	return time.Unix(0, t.epoch+int64(bootNS))
}

// Remeasure measures how far the node's wall clock has stepped since the
// start and returns it. Call it periodically (the pipeline does at every
// tick): a node wall time read after a step and before the next Remeasure
// is mapped by the previous step, off by the step for that moment.
func (t *Timeline) Remeasure() time.Duration {
	s := offset(t.src) - t.epoch
	t.step.Store(s)
	return time.Duration(s)
}

// Step is the node wall clock's step since the start, as last measured.
func (t *Timeline) Step() time.Duration { return time.Duration(t.step.Load()) }

// FromNode maps a time read from the node's wall clock onto the timeline
// (zero stays zero).
func (t *Timeline) FromNode(w time.Time) time.Time {
	if w.IsZero() {
		return w
	}
	return w.Add(-t.Step())
}

// FromAPI maps a time read from the API server's clock onto the timeline
// (zero stays zero): the API offset measured so far (0 without samples).
func (t *Timeline) FromAPI(w time.Time) time.Time {
	if w.IsZero() {
		return w
	}
	return w.Add(t.API.Offset())
}

// Identity tells whether FromNode and FromAPI map every time to itself
// (no step, no API offset): mapping can be skipped.
func (t *Timeline) Identity() bool { return t.Step() == 0 && t.API.Offset() == 0 }
