// How long after its end each delivered span reached the collector: the
// tracer's share of a trace's freshness (the model's waits for late facts,
// the batch, the upload), before the back end's own.

package otlp

import (
	"strings"
	"sync"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// LagBuckets are the upper bounds, in seconds, of the lag histogram: few,
// as every node exports it for each span kind.
var LagBuckets = []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 60}

// maxLagNames caps the span kinds the histogram keeps apart; the rest are
// summed under "other". A kind is a span name up to its first space
// ("cni.ADD bridge" is a cni.ADD): a small fixed set (internal/names); the
// cap guards against a mistake turning them into an unbounded one.
const maxLagNames = 24

// Lag is one span name's histogram: cumulative counts per LagBuckets bound,
// the count and the sum in seconds.
type Lag struct {
	Buckets []uint64
	Count   uint64
	Sum     float64
}

type lags struct {
	mu     sync.Mutex
	byName map[string]*Lag
}

// observe records the delivered spans' lags, at now.
func (l *lags) observe(items []item, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byName == nil {
		l.byName = map[string]*Lag{}
	}
	for _, it := range items {
		l.add(it.span, now)
	}
}

func (l *lags) add(s *tracepb.Span, now time.Time) {
	if s.GetEndTimeUnixNano() == 0 {
		return
	}
	// A span ended ahead of now (clock skew between the kernel's boot
	// clock mapping and the wall clock) counts as no lag.
	sec := max(now.Sub(time.Unix(0, int64(s.GetEndTimeUnixNano()))).Seconds(), 0)
	name, _, _ := strings.Cut(s.GetName(), " ")
	h := l.byName[name]
	if h == nil {
		if len(l.byName) >= maxLagNames {
			name = "other"
			h = l.byName[name]
		}
		if h == nil {
			h = &Lag{Buckets: make([]uint64, len(LagBuckets))}
			l.byName[name] = h
		}
	}
	for i, b := range LagBuckets {
		if sec <= b {
			h.Buckets[i]++
		}
	}
	h.Count++
	h.Sum += sec
}

func (l *lags) snapshot() map[string]Lag {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]Lag, len(l.byName))
	for n, h := range l.byName {
		out[n] = Lag{Buckets: append([]uint64(nil), h.Buckets...), Count: h.Count, Sum: h.Sum}
	}
	return out
}

// Lags returns, by span kind, how long after its end each span the
// collector accepted was delivered.
func (e *Exporter) Lags() map[string]Lag { return e.lags.snapshot() }
