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
	d := &differ{prev: prev, next: next, phase: phase}
	d.sandboxes()
	d.containers()
	sortEvents(d.evs)
	return d.evs
}

// differ collects the events between two snapshots.
type differ struct {
	prev, next *Snapshot
	phase      crifact.Phase
	evs        []crifact.Event
}

// event appends an event at at (the observation time when zero).
func (d *differ) event(ev crifact.Event, at time.Time) {
	if at.IsZero() {
		at = d.next.Time
	}
	ev.Phase, ev.At, ev.Observed = d.phase, at, d.next.Time
	d.evs = append(d.evs, ev)
}

func (d *differ) sandboxEvent(t crifact.EventType, at time.Time, sb crifact.Sandbox) {
	d.event(crifact.Event{Type: t, Sandbox: &sb}, at)
}

// containerEvent appends a container's event with its sandbox's last known
// state.
func (d *differ) containerEvent(t crifact.EventType, at time.Time, ct crifact.Container) {
	d.event(crifact.Event{Type: t, Container: &ct, Sandbox: d.sandboxFor(ct.SandboxID)}, at)
}

func (d *differ) sandboxFor(id string) *crifact.Sandbox {
	if sb, ok := d.next.Sandboxes[id]; ok {
		return &sb
	}
	if sb, ok := d.prev.Sandboxes[id]; ok {
		return &sb
	}
	return nil
}

func (d *differ) sandboxes() {
	for id, sb := range d.next.Sandboxes {
		old, existed := d.prev.Sandboxes[id]
		if !existed {
			d.sandboxEvent(crifact.EventSandboxCreated, sb.CreatedAt, sb)
		}
		if sb.State == crifact.SandboxNotReady && (!existed || old.State == crifact.SandboxReady) {
			d.sandboxEvent(crifact.EventSandboxStopped, time.Time{}, sb)
		}
	}
	for id, sb := range d.prev.Sandboxes {
		if _, ok := d.next.Sandboxes[id]; !ok {
			// CRI only removes stopped sandboxes: a sandbox last seen ready
			// was stopped and removed between the two snapshots.
			if sb.State == crifact.SandboxReady {
				sb.State = crifact.SandboxNotReady
				sb.NetNSPath, sb.PID = "", 0
				d.sandboxEvent(crifact.EventSandboxStopped, time.Time{}, sb)
			}
			d.sandboxEvent(crifact.EventSandboxRemoved, time.Time{}, sb)
		}
	}
}

func (d *differ) containers() {
	for id, ct := range d.next.Containers {
		old, existed := d.prev.Containers[id]
		oldState := crifact.ContainerState("")
		if existed {
			oldState = old.State
		} else {
			d.containerEvent(crifact.EventContainerCreated, ct.CreatedAt, ct)
		}
		d.containerStates(oldState, ct)
	}
	for id, ct := range d.prev.Containers {
		if _, ok := d.next.Containers[id]; !ok {
			d.containerEvent(crifact.EventContainerRemoved, time.Time{}, ct)
		}
	}
}

// containerStates appends a container's start and exit not seen yet.
func (d *differ) containerStates(oldState crifact.ContainerState, ct crifact.Container) {
	started := oldState == crifact.StateRunning || oldState == crifact.StateExited
	switch ct.State {
	case crifact.StateRunning:
		if !started {
			d.containerEvent(crifact.EventContainerStarted, ct.StartedAt, ct)
		}
	case crifact.StateExited:
		// A container that failed to start is exited without StartedAt.
		if !started && !ct.StartedAt.IsZero() {
			d.containerEvent(crifact.EventContainerStarted, ct.StartedAt, ct)
		}
		if oldState != crifact.StateExited {
			// containerd 1.6 can stamp a process that dies at once (an
			// OOM kill at start) finished before started (CI, 2026-11-28:
			// Exited sorted before Started). An exit is never before its
			// start: the event's time is clamped, the container keeps the
			// runtime's stamps.
			finished := ct.FinishedAt
			if finished.Before(ct.StartedAt) {
				finished = ct.StartedAt
			}
			d.containerEvent(crifact.EventContainerExited, finished, ct)
		}
	}
}

// sortEvents orders events by At, then eventRank, then object ID.
func sortEvents(evs []crifact.Event) {
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
