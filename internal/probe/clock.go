//go:build linux

package probe

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/probe/event"
)

// Clock converts the kernel's CLOCK_BOOTTIME stamps to wall-clock time. The
// offset between the two clocks is sampled at creation and on Resync (call it
// periodically to follow NTP steps); reads are lock-free.
type Clock struct {
	offset atomic.Int64 // realtime - boottime, ns
}

// NewClock samples the offset now.
func NewClock() *Clock {
	c := &Clock{}
	c.Resync()
	return c
}

// Resync samples the offset between CLOCK_REALTIME and CLOCK_BOOTTIME,
// keeping the reading with the narrowest bracket of three.
func (c *Clock) Resync() {
	best := int64(-1)
	var off int64
	for range 3 {
		var b1, r, b2 unix.Timespec
		_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &b1)
		_ = unix.ClockGettime(unix.CLOCK_REALTIME, &r)
		_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &b2)
		w := b2.Nano() - b1.Nano()
		if best < 0 || w < best {
			best = w
			off = r.Nano() - (b1.Nano()+b2.Nano())/2
		}
	}
	c.offset.Store(off)
}

// Wall returns the wall-clock time of a CLOCK_BOOTTIME stamp.
func (c *Clock) Wall(bootNS uint64) time.Time {
	if bootNS == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(bootNS)+c.offset.Load())
}

// BootNow returns the current CLOCK_BOOTTIME in nanoseconds.
func BootNow() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return uint64(ts.Nano())
}

// NewDecoder returns a decoder stamping events with this host's wall clock.
func NewDecoder() *event.Decoder { return event.NewDecoder(NewClock()) }
