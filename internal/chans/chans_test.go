package chans

import (
	"context"
	"testing"
	"time"
)

func TestSend(t *testing.T) {
	ch := make(chan int, 1)
	if !Send(context.Background(), ch, 1) {
		t.Fatal("Send to a channel with room: not sent")
	}
	if got := <-ch; got != 1 {
		t.Fatalf("received %d, want 1", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	full := make(chan int) // unbuffered, nobody receives
	if Send(ctx, full, 2) {
		t.Fatal("Send with a done context and no receiver: reported sent")
	}
}

func TestSendTimed(t *testing.T) {
	var b Blocked
	ch := make(chan int, 1)
	if !SendTimed(context.Background(), ch, 1, &b) {
		t.Fatal("SendTimed to a channel with room: not sent")
	}
	if b.Total() != 0 {
		t.Fatalf("blocked %v on a channel with room, want 0", b.Total())
	}
	// The channel is full now: the next send waits until it is read, and
	// counts while it waits.
	const wait = 50 * time.Millisecond
	during := make(chan time.Duration, 1)
	go func() {
		deadline := time.Now().Add(2 * time.Second)
		for b.Total() < wait && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		during <- b.Total()
		<-ch
	}()
	if !SendTimed(context.Background(), ch, 2, &b) {
		t.Fatal("SendTimed once the channel is read: not sent")
	}
	if d := <-during; d < wait {
		t.Fatalf("blocked %v while waiting, want at least %v", d, wait)
	}
	if b.Total() < wait {
		t.Fatalf("blocked %v, want at least %v", b.Total(), wait)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	before := b.Total()
	if SendTimed(ctx, ch, 3, &b) {
		t.Fatal("SendTimed to a full channel nobody reads: reported sent")
	}
	if b.Total()-before < wait {
		t.Fatalf("blocked %v until the context ended, want at least %v", b.Total()-before, wait)
	}
}
