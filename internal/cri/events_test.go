package cri

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// lateCtx is a context whose deadline has passed by the clock while its
// Err does not say so yet: the moment between gRPC's transport seeing the
// deadline and the context's own timer firing.
type lateCtx struct {
	context.Context
	deadline time.Time
}

func (c lateCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// A stream ended by its context's deadline is the context's end, however
// gRPC reports it; other stream errors stay errors.
func TestStreamErr(t *testing.T) {
	deadlineErr := status.Error(codes.DeadlineExceeded, "stream terminated by RST_STREAM with error code: CANCEL")
	past := lateCtx{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond)}
	future := lateCtx{Context: context.Background(), deadline: time.Now().Add(time.Hour)}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"deadline passed, the context's timer not fired yet", past, deadlineErr, context.DeadlineExceeded},
		{"cancelled", done, status.Error(codes.Canceled, "x"), context.Canceled},
		{"no stream", context.Background(), status.Error(codes.Unimplemented, "x"), ErrNoEventStream},
	} {
		if got := streamErr(c.ctx, c.err); !errors.Is(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// The server's own deadline, not the context's: an error.
	if got := streamErr(future, deadlineErr); errors.Is(got, context.DeadlineExceeded) || got == nil {
		t.Errorf("a deadline not the context's: %v, want the stream's error", got)
	}
}
