// Text mode's buffering: a pod's spans are held until the phase they belong
// to can be printed as one block, within bounds (the least recently active
// pod is evicted first).

package console

import (
	"container/list"
	"fmt"
	"sort"
	"time"

	"github.com/podchron/podchron/internal/span"
)

// traceState is what the text printer keeps for one pod.
type traceState struct {
	id      span.TraceID
	root    span.SpanID
	pending map[span.SpanID]span.Span
	printed map[span.SpanID]int // depth of printed spans
	base    time.Time           // offset origin, set at the first print
	res     []span.Attr
	phases  int
	spans   int
	elem    *list.Element
}

func (p *Printer) state(s *span.Span) *traceState {
	ts, ok := p.traces[s.TraceID]
	if ok {
		p.lru.MoveToBack(ts.elem)
		if len(ts.res) == 0 && len(s.Resource) > 0 {
			ts.res = s.Resource
		}
		return ts
	}
	ts = &traceState{
		id:      s.TraceID,
		root:    p.cfg.RootSpanID(s.TraceID),
		pending: make(map[span.SpanID]span.Span),
		printed: make(map[span.SpanID]int),
		res:     s.Resource,
	}
	ts.elem = p.lru.PushBack(ts)
	p.traces[s.TraceID] = ts
	for len(p.traces) > p.cfg.MaxTraces {
		old := p.lru.Front().Value.(*traceState)
		if old == ts {
			break
		}
		p.evict(old)
	}
	return ts
}

func (p *Printer) emitText(s span.Span) {
	ts := p.state(&s)
	ts.spans++
	switch {
	case s.Parent.IsZero():
		p.finish(ts, s)
	case s.Parent == ts.root:
		ts.phases++
		p.printBlock(ts, s, 0, "")
	default:
		if d, ok := ts.printed[s.Parent]; ok {
			// Its parent is already printed: print it at once, under a
			// header saying so.
			p.printBlock(ts, s, d+1, "late span of an earlier phase")
			return
		}
		if _, dup := ts.pending[s.SpanID]; !dup {
			p.pending++
		}
		ts.pending[s.SpanID] = s
		for p.pending > p.cfg.MaxPendingSpans {
			old := p.oldestPending()
			if old == nil {
				break
			}
			p.evict(old)
		}
	}
}

// oldestPending is the least recently active pod with buffered spans.
func (p *Printer) oldestPending() *traceState {
	for e := p.lru.Front(); e != nil; e = e.Next() {
		if ts := e.Value.(*traceState); len(ts.pending) > 0 {
			return ts
		}
	}
	return nil
}

// evict prints a pod's buffered spans as they are and forgets the pod.
func (p *Printer) evict(ts *traceState) {
	p.stats.EvictedPods++
	p.stats.EvictedSpans += uint64(len(ts.pending))
	p.dropTrace(ts, fmt.Sprintf("evicted from the buffer (limits %d spans, %d pods)", p.cfg.MaxPendingSpans, p.cfg.MaxTraces))
}

func (p *Printer) dropTrace(ts *traceState, why string) {
	if len(ts.pending) > 0 {
		p.printOrphans(ts, why)
	}
	p.lru.Remove(ts.elem)
	delete(p.traces, ts.id)
}

// take removes s's buffered descendants from the buffer and returns them
// as a tree: children by parent, each list in display order.
func (p *Printer) take(ts *traceState, top span.SpanID) map[span.SpanID][]span.Span {
	children := map[span.SpanID][]span.Span{}
	for _, c := range ts.pending {
		children[c.Parent] = append(children[c.Parent], c)
	}
	tree := map[span.SpanID][]span.Span{}
	var walk func(id span.SpanID)
	walk = func(id span.SpanID) {
		kids := children[id]
		if len(kids) == 0 {
			return
		}
		sortSpans(kids)
		tree[id] = kids
		for _, k := range kids {
			delete(ts.pending, k.SpanID)
			p.pending--
			walk(k.SpanID)
		}
	}
	walk(top)
	return tree
}

func sortSpans(ss []span.Span) {
	sort.Slice(ss, func(i, j int) bool {
		a, b := ss[i], ss[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		if !a.End.Equal(b.End) {
			return a.End.Before(b.End)
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return string(a.SpanID[:]) < string(b.SpanID[:])
	})
}

// setBase fixes the pod's offset origin at the earliest start known at its
// first print.
func (ts *traceState) setBase(spans ...span.Span) {
	if !ts.base.IsZero() {
		return
	}
	var earliest time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (earliest.IsZero() || t.Before(earliest)) {
			earliest = t
		}
	}
	for _, s := range spans {
		consider(s.Start)
	}
	for _, s := range ts.pending {
		consider(s.Start)
	}
	ts.base = earliest
}
