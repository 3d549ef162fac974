// Package chans holds the channel send that gives up when its context is
// done, written out once, and a variant that measures how long a sender
// waited on a full channel.
package chans

import (
	"context"
	"sync"
	"time"
)

// Send sends v on ch unless ctx is done first; it reports whether v was
// sent.
func Send[T any](ctx context.Context, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-ctx.Done():
		return false
	}
}

// Blocked adds up the time senders spent waiting on a full channel,
// including the waits going on now. The zero value is ready to use; it is
// safe for concurrent use.
type Blocked struct {
	mu      sync.Mutex
	ended   time.Duration // waits that ended
	waiting int           // senders waiting now
	since   time.Duration // the sum of their start times (since epoch)
}

// epoch is the origin of Blocked's start times (monotonic).
var epoch = time.Now()

// Total is the time spent blocked so far.
func (b *Blocked) Total() time.Duration {
	now := time.Since(epoch)
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ended + time.Duration(b.waiting)*now - b.since
}

func (b *Blocked) start() time.Duration {
	t := time.Since(epoch)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting++
	b.since += t
	return t
}

func (b *Blocked) end(start time.Duration) {
	t := time.Since(epoch)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waiting--
	b.since -= start
	b.ended += t - start
}

// SendTimed is Send, adding to b the time it waits while ch is full (a
// send that finds room reads no clock).
func SendTimed[T any](ctx context.Context, ch chan<- T, v T, b *Blocked) bool {
	select {
	case ch <- v:
		return true
	default:
	}
	defer b.end(b.start())
	return Send(ctx, ch, v)
}
