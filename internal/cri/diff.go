package cri

import (
	"sort"
	"time"

	crifact "github.com/podchron/podchron/internal/fact/cri"
)

// order within identical At: creation before start before exit before
// removal; sandbox creation first, sandbox teardown last.
var eventRank = map[crifact.EventType]int{
	crifact.EventSandboxCreated:   0,
	crifact.EventContainerCreated: 1,
	crifact.EventContainerStarted: 2,
	crifact.EventContainerExited:  3,
	crifact.EventContainerRemoved: 4,
	crifact.EventSandboxStopped:   5,
	crifact.EventSandboxRemoved:   6,
}

// Diff returns the events that turn prev into next, ordered by At (the
// runtime's own timestamps where it reports them). prev may be nil (nothing
// known yet). Every event is stamped with phase and next.Time.
// States an object skipped between the two snapshots are synthesized where
// the runtime still reports them (a container first seen exited yields
// Created, Started and Exited; a ready sandbox that disappeared yields
// Stopped then Removed), so a consumer sees each object pass through every
// state it reached. The one exception: a container that exited and was
// removed between two snapshots yields only Removed (its exit status is gone
// with it); the Removed event carries its last known state.
func Diff(prev, next *Snapshot, phase crifact.Phase) []crifact.Event {
	if prev == nil {
		prev = &Snapshot{}
	}
	var evs []crifact.Event
	obs := next.Time
	emitSB := func(t crifact.EventType, at time.Time, sb crifact.Sandbox) {
		if at.IsZero() {
			at = obs
		}
		evs = append(evs, crifact.Event{Type: t, Phase: phase, At: at, Observed: obs, Sandbox: &sb})
	}
	emitCT := func(t crifact.EventType, at time.Time, ct crifact.Container, sb *crifact.Sandbox) {
		if at.IsZero() {
			at = obs
		}
		evs = append(evs, crifact.Event{Type: t, Phase: phase, At: at, Observed: obs, Container: &ct, Sandbox: sb})
	}
	sandboxFor := func(id string) *crifact.Sandbox {
		if sb, ok := next.Sandboxes[id]; ok {
			return &sb
		}
		if sb, ok := prev.Sandboxes[id]; ok {
			return &sb
		}
		return nil
	}

	for id, sb := range next.Sandboxes {
		old, existed := prev.Sandboxes[id]
		if !existed {
			emitSB(crifact.EventSandboxCreated, sb.CreatedAt, sb)
		}
		if sb.State == crifact.SandboxNotReady && (!existed || old.State == crifact.SandboxReady) {
			emitSB(crifact.EventSandboxStopped, time.Time{}, sb)
		}
	}
	for id, sb := range prev.Sandboxes {
		if _, ok := next.Sandboxes[id]; !ok {
			// CRI only removes stopped sandboxes: a sandbox last seen ready
			// was stopped and removed between the two snapshots.
			if sb.State == crifact.SandboxReady {
				sb.State = crifact.SandboxNotReady
				sb.NetNSPath, sb.PID = "", 0
				emitSB(crifact.EventSandboxStopped, time.Time{}, sb)
			}
			emitSB(crifact.EventSandboxRemoved, time.Time{}, sb)
		}
	}

	for id, ct := range next.Containers {
		old, existed := prev.Containers[id]
		oldState := crifact.ContainerState("")
		if existed {
			oldState = old.State
		} else {
			emitCT(crifact.EventContainerCreated, ct.CreatedAt, ct, sandboxFor(ct.SandboxID))
		}
		started := oldState == crifact.StateRunning || oldState == crifact.StateExited
		switch ct.State {
		case crifact.StateRunning:
			if !started {
				emitCT(crifact.EventContainerStarted, ct.StartedAt, ct, sandboxFor(ct.SandboxID))
			}
		case crifact.StateExited:
			// A container that failed to start is exited without StartedAt.
			if !started && !ct.StartedAt.IsZero() {
				emitCT(crifact.EventContainerStarted, ct.StartedAt, ct, sandboxFor(ct.SandboxID))
			}
			if oldState != crifact.StateExited {
				emitCT(crifact.EventContainerExited, ct.FinishedAt, ct, sandboxFor(ct.SandboxID))
			}
		}
	}
	for id, ct := range prev.Containers {
		if _, ok := next.Containers[id]; !ok {
			emitCT(crifact.EventContainerRemoved, time.Time{}, ct, sandboxFor(ct.SandboxID))
		}
	}

	sort.SliceStable(evs, func(i, j int) bool {
		a, b := evs[i], evs[j]
		if !a.At.Equal(b.At) {
			return a.At.Before(b.At)
		}
		if eventRank[a.Type] != eventRank[b.Type] {
			return eventRank[a.Type] < eventRank[b.Type]
		}
		return eventKey(a) < eventKey(b)
	})
	return evs
}

func eventKey(e crifact.Event) string {
	if e.Container != nil {
		return e.Container.ID
	}
	if e.Sandbox != nil {
		return e.Sandbox.ID
	}
	return ""
}
