//go:build !linux

package clock

import "time"

var processStart = time.Now()

// System reads Go's monotonic clock (since the process started, standing
// in for the boot clock) and the wall clock.
type System struct{}

// Boot is the monotonic time since the process started.
func (System) Boot() time.Duration { return time.Since(processStart) }

// Real is the wall clock (without its monotonic reading).
func (System) Real() time.Time { return time.Now().Round(0) }
