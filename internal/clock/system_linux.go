//go:build linux

package clock

import (
	"time"

	"golang.org/x/sys/unix"
)

// System reads CLOCK_BOOTTIME and CLOCK_REALTIME.
type System struct{}

// Boot is CLOCK_BOOTTIME.
func (System) Boot() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return time.Duration(ts.Nano())
}

// Real is CLOCK_REALTIME.
func (System) Real() time.Time {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_REALTIME, &ts)
	return time.Unix(0, ts.Nano())
}
