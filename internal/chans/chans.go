// Package chans holds the channel send that gives up when its context is
// done, written out once, and a variant that measures how long a sender
// waited on a full channel.
package chans

import (
	"context"
	"sync/atomic"
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

// Blocked adds up the time senders spent waiting on a full channel. The
// zero value is ready to use; it is safe for concurrent use.
type Blocked struct {
	ns atomic.Int64
}

// Total is the time spent blocked so far.
func (b *Blocked) Total() time.Duration { return time.Duration(b.ns.Load()) }

// SendTimed is Send, adding to b the time it waited when ch was full (a
// send that finds room reads no clock).
func SendTimed[T any](ctx context.Context, ch chan<- T, v T, b *Blocked) bool {
	select {
	case ch <- v:
		return true
	default:
	}
	start := time.Now()
	defer func() { b.ns.Add(int64(time.Since(start))) }()
	return Send(ctx, ch, v)
}
