//go:build linux

package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/probe/event"

	"github.com/cilium/ebpf/ringbuf"
)

// Source is a stream of kernel events. The ring buffer reader implements it;
// tests and replays feed recorded events through SliceSource.
type Source interface {
	// Next blocks until the next event. It returns io.EOF once the source
	// is closed or exhausted, or ctx's error once ctx is done.
	Next(ctx context.Context) (kernel.Event, error)
	Close() error
}

// RingSource reads the probes' ring buffer.
type RingSource struct {
	p        *Probes
	rd       *ringbuf.Reader
	rec      ringbuf.Record // reused: ReadInto keeps its buffer
	clock    *Clock         // nil: the configured clock (Config.Clock), never resynced
	dec      *event.Decoder
	poll     time.Duration
	lastSync time.Time
	deadline time.Time
	// The poll slows to idlePoll after idlePolls polls in a row found no
	// record (quiet counts them; seen: a record since the last).
	idlePoll  time.Duration
	idlePolls int
	quiet     int
	seen      bool
	// The context whose cancellation closes the reader, registered once
	// (not per event: Next runs for every record).
	ctx  context.Context
	stop func() bool
	// DecodeErrors counts records that could not be decoded (skipped).
	DecodeErrors atomic.Uint64
}

// NewSource opens a reader on the ring buffer.
func (p *Probes) NewSource() (*RingSource, error) {
	rd, err := ringbuf.NewReader(p.objs.Events)
	if err != nil {
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	s := &RingSource{p: p, rd: rd, poll: p.cfg.PollInterval, idlePoll: p.cfg.IdlePollInterval,
		idlePolls: int(p.cfg.IdlePollInterval / p.cfg.PollInterval)}
	if p.cfg.Clock != nil {
		s.dec = event.NewDecoder(p.cfg.Clock)
		return s, nil
	}
	s.clock = NewClock()
	s.dec = event.NewDecoder(s.clock)
	s.lastSync = time.Now()
	return s, nil
}

// Decoder returns the source's decoder (its clock stamps wall times).
func (s *RingSource) Decoder() *event.Decoder { return s.dec }

// Next returns the next decoded event.
func (s *RingSource) Next(ctx context.Context) (kernel.Event, error) {
	// A cancelled context unblocks the reader by closing it.
	if ctx != s.ctx {
		if s.stop != nil {
			s.stop()
		}
		s.ctx = ctx
		s.stop = context.AfterFunc(ctx, func() { s.rd.Close() })
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The deadline bounds a wait for records the kernel submitted without
		// a wakeup; renewing it costs a lock, so only when half spent.
		if poll := s.pollNow(); s.deadline.IsZero() || time.Until(s.deadline) < poll/2 {
			s.deadline = time.Now().Add(poll)
			s.rd.SetDeadline(s.deadline)
		}
		err := s.rd.ReadInto(&s.rec)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			s.polled()
			s.resync()
			continue
		case errors.Is(err, ringbuf.ErrClosed):
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, io.EOF
		case err != nil:
			return nil, fmt.Errorf("read ring buffer: %w", err)
		}
		if !s.seen {
			s.recordSeen()
		}
		ev, err := s.dec.Decode(s.rec.RawSample)
		if err != nil {
			s.DecodeErrors.Add(1)
			s.p.log.Warn("undecodable event skipped", "err", err, "bytes", len(s.rec.RawSample))
			continue
		}
		if c, ok := ev.(*kernel.CgroupEvent); ok && s.p.ns.CgroupLevel > 0 {
			// Paths as the tracer's cgroup namespace shows them; a cgroup
			// outside it is not this node's.
			local, ok := s.p.ns.LocalPath(c.Path)
			if !ok {
				continue
			}
			c.Path = local
			c.Level -= int32(s.p.ns.CgroupLevel)
		}
		if o, ok := ev.(*kernel.OOMEvent); ok && s.p.ns.CgroupLevel > 0 {
			o.Memcgs = localMemcgs(o.Memcgs, s.p.ns.CgroupLevel)
		}
		s.p.observe(ev)
		return ev, nil
	}
}

// pollNow is the poll's period: idlePoll once idlePolls polls in a row found
// nothing. Records that come after a quiet time wake the reader (the
// probes' submit: a CPU's first record after WakeupGap without one), so
// only those that follow others closely wait for a poll, and the poll is
// frequent while records come.
func (s *RingSource) pollNow() time.Duration {
	if s.quiet >= s.idlePolls {
		return s.idlePoll
	}
	return s.poll
}

// polled notes a poll's deadline passed: whether a record came since the
// last.
func (s *RingSource) polled() {
	s.deadline = time.Time{}
	if !s.seen && s.quiet < s.idlePolls {
		s.quiet++ // recordSeen resets it
	}
	s.seen = false
}

// recordSeen notes the first record since the last poll: an idle poll's
// far deadline is brought back to the frequent poll's.
func (s *RingSource) recordSeen() {
	s.seen = true
	if s.pollNow() != s.poll {
		s.deadline = time.Time{}
	}
	s.quiet = 0
}

// resync follows wall-clock steps every few seconds.
func (s *RingSource) resync() {
	if s.clock != nil && time.Since(s.lastSync) > 10*time.Second {
		s.clock.Resync()
		s.lastSync = time.Now()
	}
}

// Pending reports how many bytes wait in the ring buffer.
func (s *RingSource) Pending() int { return s.rd.AvailableBytes() }

// Close closes the reader; a blocked Next returns io.EOF.
func (s *RingSource) Close() error {
	if s.stop != nil {
		s.stop()
	}
	return s.rd.Close()
}

// SliceSource replays a fixed list of events.
type SliceSource struct {
	Events []kernel.Event
	i      int
}

// Next returns the next event, io.EOF at the end.
func (s *SliceSource) Next(ctx context.Context) (kernel.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.i >= len(s.Events) {
		return nil, io.EOF
	}
	s.i++
	return s.Events[s.i-1], nil
}

// Close is a no-op.
func (s *SliceSource) Close() error { return nil }

// localMemcgs maps the memory cgroups of an OOM kill onto the tracer's
// cgroupfs mount: levels from its root, the host's cgroups above it left
// out (what ran out there is, for the node, its memory). The node's root is
// taken to be as deep in the memory hierarchy as in the probes' one, as
// container runtimes (and test/harness/nested) make it.
func localMemcgs(ms []kernel.MemcgOOMs, level int) []kernel.MemcgOOMs {
	out := ms[:0]
	for _, m := range ms {
		if int(m.Level) < level {
			continue
		}
		m.Level -= uint32(level)
		out = append(out, m)
	}
	return out
}
