package cri

import (
	"context"
	"fmt"
	"time"

	crifact "github.com/podchron/podchron/internal/fact/cri"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Snapshot is the runtime's sandboxes and containers at one point in time.
// A Snapshot is immutable once returned; do not modify its maps.
type Snapshot struct {
	// Time is when the snapshot was taken (just before listing).
	Time       time.Time
	Sandboxes  map[string]crifact.Sandbox
	Containers map[string]crifact.Container
}

// Snapshot lists sandboxes and containers and fills in their detailed status.
// To keep polling cheap, details are reused from prev (which may be nil) for
// objects whose state has not changed since; only new objects and objects
// that changed state cost a status call. Objects that disappear between the
// list and the status call are left out. A status call failing for another
// reason keeps the list-level view (Detailed() false) and is retried on the
// next snapshot. Errors listing are returned wrapped.
func (c *Client) Snapshot(ctx context.Context, prev *Snapshot) (*Snapshot, error) {
	now := time.Now()
	sbs, err := c.ListSandboxes(ctx)
	if err != nil {
		return nil, fmt.Errorf("cri: snapshot: %w", err)
	}
	cts, err := c.ListContainers(ctx)
	if err != nil {
		return nil, fmt.Errorf("cri: snapshot: %w", err)
	}
	snap := &Snapshot{
		Time:       now,
		Sandboxes:  make(map[string]crifact.Sandbox, len(sbs)),
		Containers: make(map[string]crifact.Container, len(cts)),
	}
	for _, sb := range sbs {
		if prev != nil {
			if old, ok := prev.Sandboxes[sb.ID]; ok && old.Detailed && old.State == sb.State {
				snap.Sandboxes[sb.ID] = old
				continue
			}
		}
		full, err := c.SandboxStatus(ctx, sb.ID)
		switch {
		case err == nil:
			snap.Sandboxes[sb.ID] = full
		case IsNotFound(err):
			// removed since listed
		case ctx.Err() != nil || isTransport(err):
			return nil, fmt.Errorf("cri: snapshot: %w", err)
		default:
			c.log.Warn("sandbox status failed; keeping list view", "sandbox_id", sb.ID, "err", err)
			snap.Sandboxes[sb.ID] = sb
		}
	}
	for _, ct := range cts {
		if prev != nil {
			if old, ok := prev.Containers[ct.ID]; ok && old.Detailed && old.State == ct.State {
				snap.Containers[ct.ID] = old
				continue
			}
		}
		full, err := c.ContainerStatus(ctx, ct.ID, ct.SandboxID)
		switch {
		case err == nil:
			if full.SandboxID == "" {
				full.SandboxID = ct.SandboxID
			}
			full.Runtime = c.version
			snap.Containers[ct.ID] = full
		case IsNotFound(err):
		case ctx.Err() != nil || isTransport(err):
			return nil, fmt.Errorf("cri: snapshot: %w", err)
		default:
			c.log.Warn("container status failed; keeping list view", "container_id", ct.ID, "err", err)
			ct.Runtime = c.version
			snap.Containers[ct.ID] = ct
		}
	}
	return snap, nil
}

// isTransport reports whether err means the runtime itself could not be
// talked to, as opposed to a failure concerning one object.
func isTransport(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}
