package pipeline

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pace is how often the sources that report progress on a ticker of their
// own (RuntimeSource, WithProgress) report it: Fast while the model waits
// on its clock (correlate.Correlator.Waiting: inputs held for the sources'
// progress, a phase a timer ends soon), Quiet otherwise. The switch to fast
// also asks each source for a report at once, so an input held for their
// progress waits no longer than at a fixed fast pace. On an idle node the
// sources then wake the tracer a few times a second, not ten times each:
// each wakeup of a timer also wakes the Go runtime's sysmon a few times
// (bench/idle.sh). Quiet stays well inside the model's staleness limit (a
// source silent for 10 s is taken as down).
//
// The pipeline's loop sets it (Config.Pace); a source given none reports
// at its fixed period.
type Pace struct {
	Fast, Quiet time.Duration

	fast atomic.Bool // read by the loop at every input, written on a switch
	mu   sync.Mutex
	now  chan struct{} // closed at the next switch to fast
}

// NewPace returns a Pace that starts quiet.
func NewPace(fast, quiet time.Duration) *Pace {
	return &Pace{Fast: fast, Quiet: max(quiet, fast), now: make(chan struct{})}
}

// set switches the pace (the loop, for whether the model waits).
func (p *Pace) set(fast bool) {
	if p == nil || p.fast.Load() == fast {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fast.Store(fast)
	if fast {
		close(p.now)
		p.now = make(chan struct{})
	}
}

// state is the period to report at now and a channel closed at the next
// switch to fast.
func (p *Pace) state() (time.Duration, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fast.Load() {
		return p.Fast, p.now
	}
	return p.Quiet, p.now
}

// pacer is one source's progress ticker under a Pace (nil: a fixed period).
type pacer struct {
	p   *Pace
	t   *time.Ticker
	d   time.Duration
	now <-chan struct{} // nil without a Pace: never ready
}

func newPacer(p *Pace, every time.Duration) *pacer {
	pc := &pacer{p: p, d: every}
	if p != nil {
		pc.d, pc.now = p.state()
		if p.fast.Load() {
			pc.now = closed // a source started while the model waits: at once
		}
	}
	pc.t = time.NewTicker(pc.d)
	return pc
}

func (pc *pacer) stop() { pc.t.Stop() }

// sync follows the pace after the ticker or the switch to fast fired.
func (pc *pacer) sync() {
	if pc.p == nil {
		return
	}
	d, now := pc.p.state()
	pc.now = now
	if d != pc.d {
		pc.d = d
		pc.t.Reset(d)
	}
}

// closed is a channel that is always ready.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// defaultProgressEvery: a source's progress period without a Pace.
const defaultProgressEvery = 250 * time.Millisecond
