package cri

import (
	"fmt"
	"sort"
	"time"
)

// EventType is the kind of a runtime Event.
type EventType string

// Event types.
const (
	// EventSandboxCreated: a sandbox appeared.
	EventSandboxCreated EventType = "SandboxCreated"
	// EventSandboxStopped: a sandbox went from ready to not ready (StopPodSandbox,
	// or a sandbox first seen already not ready).
	EventSandboxStopped EventType = "SandboxStopped"
	// EventSandboxRemoved: a sandbox disappeared.
	EventSandboxRemoved EventType = "SandboxRemoved"
	// EventContainerCreated: a container appeared.
	EventContainerCreated EventType = "ContainerCreated"
	// EventContainerStarted: a container was seen started (state running, or
	// exited with a start time).
	EventContainerStarted EventType = "ContainerStarted"
	// EventContainerExited: a container was seen exited; Container carries exit
	// code, reason and finish time.
	EventContainerExited EventType = "ContainerExited"
	// EventContainerRemoved: a container disappeared.
	EventContainerRemoved EventType = "ContainerRemoved"
	// EventRuntimeUnavailable: the runtime could not be reached; Gap.Since is set,
	// Gap.Until is zero.
	EventRuntimeUnavailable EventType = "RuntimeUnavailable"
	// EventRuntimeAvailable: the runtime answers again after EventRuntimeUnavailable;
	// Gap is complete. Changes that happened during the gap follow with
	// Phase == PhaseResync.
	EventRuntimeAvailable EventType = "RuntimeAvailable"
)

// Phase tells how a change was observed.
type Phase string

// Phases.
const (
	// PhaseLive: observed between two consecutive successful polls.
	PhaseLive Phase = "live"
	// PhaseInitial: the object already existed at the first successful poll.
	PhaseInitial Phase = "initial"
	// PhaseResync: the change happened while the runtime was unavailable
	// and was observed on the first poll after it came back.
	PhaseResync Phase = "resync"
)

// Gap is a period during which the runtime could not be observed.
type Gap struct {
	// LastSeen is the time of the last successful poll before the gap
	// (zero if the runtime was never reached).
	LastSeen time.Time
	// Since is the time of the first failed attempt. The runtime went away
	// somewhere in [LastSeen, Since].
	Since time.Time
	// Until is the time of the first successful poll after the gap (zero
	// while the gap is ongoing).
	Until time.Time
	// Attempts is the number of failed attempts so far.
	Attempts int
	// Err is the first error seen.
	Err error
}

// Duration is Until-Since (or 0 while ongoing).
func (g Gap) Duration() time.Duration {
	if g.Until.IsZero() {
		return 0
	}
	return g.Until.Sub(g.Since)
}

func (g Gap) String() string {
	if g.Until.IsZero() {
		return fmt.Sprintf("runtime unavailable since %s (last seen %s): %v",
			g.Since.Format(time.RFC3339Nano), fmtTime(g.LastSeen), g.Err)
	}
	return fmt.Sprintf("runtime unavailable from %s to %s (%s, last seen %s): %v",
		g.Since.Format(time.RFC3339Nano), g.Until.Format(time.RFC3339Nano), g.Duration(), fmtTime(g.LastSeen), g.Err)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339Nano)
}

// Event is one observed change of the runtime's state.
type Event struct {
	Type  EventType
	Phase Phase
	// At is when the change happened according to the runtime when known
	// (CreatedAt, StartedAt, FinishedAt), else when it was observed.
	At time.Time
	// Observed is the time of the snapshot in which the change was seen.
	Observed time.Time
	// Sandbox is set for sandbox events and, when known, for container events
	// (the container's sandbox).
	Sandbox *Sandbox
	// Container is set for container events.
	Container *Container
	// Gap is set for EventRuntimeUnavailable and EventRuntimeAvailable.
	Gap *Gap
}

func (e Event) String() string {
	switch {
	case e.Container != nil:
		c := e.Container
		s := fmt.Sprintf("%s %s/%s %s[%s] state=%s", e.Type, c.PodNamespace, c.PodName, c.Name, shortID(c.ID), c.State)
		if e.Type == EventContainerExited {
			s += fmt.Sprintf(" exit=%d reason=%s", c.ExitCode, c.Reason)
		}
		return s + " phase=" + string(e.Phase)
	case e.Sandbox != nil:
		return fmt.Sprintf("%s %s/%s[%s] state=%s phase=%s", e.Type, e.Sandbox.PodNamespace, e.Sandbox.PodName, shortID(e.Sandbox.ID), e.Sandbox.State, e.Phase)
	case e.Gap != nil:
		return fmt.Sprintf("%s %s", e.Type, e.Gap)
	}
	return string(e.Type)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// order within identical At: creation before start before exit before
// removal; sandbox creation first, sandbox teardown last.
var eventRank = map[EventType]int{
	EventSandboxCreated:   0,
	EventContainerCreated: 1,
	EventContainerStarted: 2,
	EventContainerExited:  3,
	EventContainerRemoved: 4,
	EventSandboxStopped:   5,
	EventSandboxRemoved:   6,
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
func Diff(prev, next *Snapshot, phase Phase) []Event {
	if prev == nil {
		prev = &Snapshot{}
	}
	var evs []Event
	obs := next.Time
	emitSB := func(t EventType, at time.Time, sb Sandbox) {
		if at.IsZero() {
			at = obs
		}
		evs = append(evs, Event{Type: t, Phase: phase, At: at, Observed: obs, Sandbox: &sb})
	}
	emitCT := func(t EventType, at time.Time, ct Container, sb *Sandbox) {
		if at.IsZero() {
			at = obs
		}
		evs = append(evs, Event{Type: t, Phase: phase, At: at, Observed: obs, Container: &ct, Sandbox: sb})
	}
	sandboxFor := func(id string) *Sandbox {
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
			emitSB(EventSandboxCreated, sb.CreatedAt, sb)
		}
		if sb.State == SandboxNotReady && (!existed || old.State == SandboxReady) {
			emitSB(EventSandboxStopped, time.Time{}, sb)
		}
	}
	for id, sb := range prev.Sandboxes {
		if _, ok := next.Sandboxes[id]; !ok {
			// CRI only removes stopped sandboxes: a sandbox last seen ready
			// was stopped and removed between the two snapshots.
			if sb.State == SandboxReady {
				sb.State = SandboxNotReady
				sb.NetNSPath, sb.PID = "", 0
				emitSB(EventSandboxStopped, time.Time{}, sb)
			}
			emitSB(EventSandboxRemoved, time.Time{}, sb)
		}
	}

	for id, ct := range next.Containers {
		old, existed := prev.Containers[id]
		oldState := ContainerState("")
		if existed {
			oldState = old.State
		} else {
			emitCT(EventContainerCreated, ct.CreatedAt, ct, sandboxFor(ct.SandboxID))
		}
		started := oldState == StateRunning || oldState == StateExited
		switch ct.State {
		case StateRunning:
			if !started {
				emitCT(EventContainerStarted, ct.StartedAt, ct, sandboxFor(ct.SandboxID))
			}
		case StateExited:
			// A container that failed to start is exited without StartedAt.
			if !started && !ct.StartedAt.IsZero() {
				emitCT(EventContainerStarted, ct.StartedAt, ct, sandboxFor(ct.SandboxID))
			}
			if oldState != StateExited {
				emitCT(EventContainerExited, ct.FinishedAt, ct, sandboxFor(ct.SandboxID))
			}
		}
	}
	for id, ct := range prev.Containers {
		if _, ok := next.Containers[id]; !ok {
			emitCT(EventContainerRemoved, time.Time{}, ct, sandboxFor(ct.SandboxID))
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

func eventKey(e Event) string {
	if e.Container != nil {
		return e.Container.ID
	}
	if e.Sandbox != nil {
		return e.Sandbox.ID
	}
	return ""
}
