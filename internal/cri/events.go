package cri

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrNoEventStream is returned when the runtime does not stream container
// events over CRI (GetContainerEvents answers Unimplemented: containerd 1.6). containerd
// 1.7+, 2.x and CRI-O stream them (the kubelet's evented PLEG reads the
// same stream).
var ErrNoEventStream = errors.New("the runtime does not stream container events (CRI GetContainerEvents)")

// StreamEvents reads the runtime's container event stream until ctx is done
// or the stream breaks, calling onEvent for each event (from this
// goroutine). It returns ErrNoEventStream when the runtime has no stream,
// ctx.Err() once ctx is done, else the stream's error.
//
// The Watcher uses an event only as a cue to poll at once: the snapshot
// and its diff stay the one source of runtime facts, so a lost or late
// event costs latency, never a fact.
func (c *Client) StreamEvents(ctx context.Context, onEvent func(*runtimeapi.ContainerEventResponse)) error {
	s, err := c.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return streamErr(ctx, err)
	}
	for {
		ev, err := s.Recv()
		if err != nil {
			return streamErr(ctx, err)
		}
		onEvent(ev)
	}
}

func streamErr(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case status.Code(err) == codes.DeadlineExceeded && deadlinePassed(ctx):
		// gRPC's transport saw the context's deadline pass (a stream the
		// server reset as it ended) before the context's own timer said so:
		// the context's end all the same (CI on bd52454, containerd 2.4.2).
		return context.DeadlineExceeded
	case status.Code(err) == codes.Unimplemented:
		return ErrNoEventStream
	}
	return fmt.Errorf("container event stream: %w", err)
}

// deadlinePassed reports whether ctx's deadline is past by the clock, as
// gRPC decides it, whether or not ctx.Err() reports it yet.
func deadlinePassed(ctx context.Context) bool {
	d, ok := ctx.Deadline()
	return ok && !d.After(time.Now())
}
