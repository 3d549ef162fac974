package containerd

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Timings collects durations per operation name. Safe for concurrent use.
type Timings struct {
	mu sync.Mutex
	m  map[string][]time.Duration
}

// NewTimings returns an empty Timings.
func NewTimings() *Timings { return &Timings{m: map[string][]time.Duration{}} }

// Record adds one duration for op.
func (t *Timings) Record(op string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.m[op] = append(t.m[op], d)
}

// Get returns the durations recorded for op, in order.
func (t *Timings) Get(op string) []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.m[op])
}

// Stats summarizes durations.
type Stats struct {
	N                int
	Min, Median, Max time.Duration
	Mean             time.Duration
	Total            time.Duration
	Last             time.Duration
	Op               string
}

func (s Stats) String() string {
	if s.N == 1 {
		return fmt.Sprintf("%-22s n=1   %v", s.Op, s.Last.Round(time.Millisecond/10))
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond / 10) }
	return fmt.Sprintf("%-22s n=%-3d min=%v median=%v mean=%v max=%v", s.Op, s.N, r(s.Min), r(s.Median), r(s.Mean), r(s.Max))
}

// Stats returns the summary of op (zero Stats when nothing was recorded).
func (t *Timings) Stats(op string) Stats {
	ds := t.Get(op)
	if len(ds) == 0 {
		return Stats{Op: op}
	}
	last := ds[len(ds)-1]
	slices.Sort(ds)
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	return Stats{
		N: len(ds), Min: ds[0], Max: ds[len(ds)-1], Median: ds[len(ds)/2],
		Mean: total / time.Duration(len(ds)), Total: total, Last: last, Op: op,
	}
}

// Summary is a multi-line table of every operation, sorted by name.
func (t *Timings) Summary() string {
	t.mu.Lock()
	ops := make([]string, 0, len(t.m))
	for op := range t.m {
		ops = append(ops, op)
	}
	t.mu.Unlock()
	slices.Sort(ops)
	var b strings.Builder
	for _, op := range ops {
		b.WriteString(t.Stats(op).String())
		b.WriteByte('\n')
	}
	return b.String()
}
