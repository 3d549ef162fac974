package clock

import (
	"sync"
	"time"
)

// Fake is a Source for tests: both clocks advance together (Advance), the
// wall clock alone steps (StepWall). Safe for concurrent use.
type Fake struct {
	mu   sync.Mutex
	boot time.Duration
	real time.Time
}

// NewFake starts a fake at boot time boot, wall time wall.
func NewFake(boot time.Duration, wall time.Time) *Fake { return &Fake{boot: boot, real: wall} }

// Boot reads the fake boot clock.
func (f *Fake) Boot() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.boot
}

// Real reads the fake wall clock.
func (f *Fake) Real() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.real
}

// Advance lets d pass on both clocks.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.boot += d
	f.real = f.real.Add(d)
}

// StepWall steps the wall clock alone by d (NTP, date -s).
func (f *Fake) StepWall(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.real = f.real.Add(d)
}
