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
	// Delay is how long the node's input the model handled last waited
	// between its stamp and its handling: how far the model is behind
	// that source's inputs.
	Delay time.Duration
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
			Delay:   time.Duration(max(0, n.delay.Load())),
		})
	}
	return out
}
