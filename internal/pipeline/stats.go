package pipeline

import (
	"sync"
	"sync/atomic"
	"time"
)

// Stats are a running pipeline's gauges (Config.Stats): each node's inputs
// in flight and time blocked on the input queue, and the facts the model
// holds back for ordering. Snapshot reads them at any time. The zero value
// is ready to use.
type Stats struct {
	mu      sync.Mutex
	nodes   []*node
	pending atomic.Int64
}

// NodeStats are one node's (a source sending into the input queue).
type NodeStats struct {
	Node string
	// Queued are the inputs the node is handing over or has handed over
	// that the model has not handled yet.
	Queued int
	// Blocked is the time the node spent waiting on a full input queue.
	Blocked time.Duration
	// Delay: how long the node's inputs waited between their stamp and
	// their handling (how far the model was behind that source), as a
	// histogram.
	Delay DelayHistogram
}

// DelayBounds are the upper bounds of the delay histogram's buckets: from
// the milliseconds of a model on time to the seconds of one far behind
// (10 s is the model's staleness limit for a silent source).
var DelayBounds = [...]time.Duration{
	time.Millisecond, 5 * time.Millisecond, 25 * time.Millisecond, 100 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second,
}

// DelayHistogram is a cumulative histogram of delays: Buckets[i] counts
// those at most DelayBounds[i].
type DelayHistogram struct {
	Count   uint64
	Sum     time.Duration
	Buckets []uint64
}

// delayHistogram counts delays as they are observed (one writer, the
// loop; read at any time). Plain atomics, as the other gauges here: the
// pipeline does not import the exporter's client library, which makes a
// constant histogram of the snapshot at each scrape.
type delayHistogram struct {
	count   atomic.Uint64
	sum     atomic.Int64
	buckets [len(DelayBounds)]atomic.Uint64 // per DelayBounds, not cumulative
}

func (h *delayHistogram) observe(d time.Duration) {
	d = max(d, 0)
	for i, b := range DelayBounds {
		if d <= b {
			h.buckets[i].Add(1)
			break
		}
	}
	h.sum.Add(int64(d))
	h.count.Add(1)
}

func (h *delayHistogram) snapshot() DelayHistogram {
	out := DelayHistogram{Count: h.count.Load(), Sum: time.Duration(h.sum.Load()), Buckets: make([]uint64, len(DelayBounds))}
	var acc uint64
	for i := range DelayBounds {
		acc += h.buckets[i].Load()
		out.Buckets[i] = acc
	}
	// Read apart, count may trail a bucket just added to.
	out.Count = max(out.Count, acc)
	return out
}

// Snapshot is what Stats read at one time.
type Snapshot struct {
	// Nodes: the kernel's first, then the other sources by name.
	Nodes []NodeStats
	// PendingFacts are the inputs the model's sequencer holds until its
	// sources' progress lets it handle them in order.
	PendingFacts int
}

func (s *Stats) set(nodes []*node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = nodes
}

// Snapshot reads the gauges.
func (s *Stats) Snapshot() Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := Snapshot{PendingFacts: int(s.pending.Load())}
	for _, n := range s.nodes {
		out.Nodes = append(out.Nodes, NodeStats{
			Node:    n.name,
			Queued:  max(0, int(n.queued.Load())),
			Blocked: n.blocked.Total(),
			Delay:   n.delay.snapshot(),
		})
	}
	return out
}
