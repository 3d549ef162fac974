// Spans dropped before their trace's root went: told on that root.

package otlp

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// maxTracesWithDrops bounds the traces whose drops wait for their root (a
// node's live pods are a few hundred; an entry goes when its root is
// batched or dropped): a trace past it is counted
// (podchron_spans_dropped_total) and not told.
const maxTracesWithDrops = 4096

// traceDrops: the spans each trace lost before its root was batched, by
// reason, so the root says its trace lacks them. The model emits a pod's
// root last (when the pod is gone), so the spans a collector outage or a
// full queue cost a pod during its life are told on that pod's own trace,
// not only in the node-wide counter. What goes with or after the root (the
// batch that held it failed) has no span left to tell it.
type traceDrops struct {
	mu     sync.Mutex
	traces map[span.TraceID]map[string]dropTally
}

// dropTally: how many spans of one trace one reason dropped, and when the
// last was.
type dropTally struct {
	n    int64
	last time.Time
}

// add counts a span of trace t dropped for reason at time at; a dropped
// root (no parent) takes its trace's drops with it, as nothing is left to
// tell them.
func (d *traceDrops) add(t span.TraceID, root bool, reason string, at time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if root {
		delete(d.traces, t)
		return
	}
	byReason := d.traces[t]
	if byReason == nil {
		if len(d.traces) >= maxTracesWithDrops {
			return
		}
		if d.traces == nil {
			d.traces = map[span.TraceID]map[string]dropTally{}
		}
		byReason = map[string]dropTally{}
		d.traces[t] = byReason
	}
	c := byReason[reason]
	c.n++
	c.last = at
	byReason[reason] = c
}

// onRoot returns root with one podchron.spans_dropped event per reason its
// trace lost spans for (podchron.drop.reason, podchron.drop.count), and
// forgets them. Other spans come back as they are. root's slices are the
// caller's: the events go on a copy.
func (d *traceDrops) onRoot(root span.Span) span.Span {
	if !root.Parent.IsZero() {
		return root
	}
	d.mu.Lock()
	byReason := d.traces[root.TraceID]
	delete(d.traces, root.TraceID)
	d.mu.Unlock()
	if len(byReason) == 0 {
		return root
	}
	evs := slices.Clip(root.Events)
	for _, reason := range slices.Sorted(maps.Keys(byReason)) {
		c := byReason[reason]
		at := c.last
		// Within the root, where a trace viewer shows it.
		if at.Before(root.Start) || at.After(root.End) {
			at = root.End
		}
		evs = append(evs, span.SpanEvent{Name: names.EventSpansDropped, Time: at, Attrs: []span.Attr{
			span.String(names.DropReason, reason), span.Int(names.DropCount, c.n)}})
	}
	root.Events = evs
	return root
}
