package metrics

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podchron/podchron/internal/names"
)

// SpanStats is what the span exporter (the OTLP sink) reports: cumulative
// counts of spans exported and dropped, the latter by reason. Reasons should
// be a small fixed set (queue_full, export_error, ...); past maxDropReasons
// distinct reasons the rest are summed into "other".
type SpanStats interface {
	Stats() (exported uint64, dropped map[string]uint64)
}

// SpanLags is what an exporter that times its deliveries adds: by span
// kind, how long after its end each delivered span reached the collector,
// as cumulative counts per bucket bound (seconds), count and sum.
type SpanLags interface {
	LagBuckets() []float64
	Lags() map[string]SpanLag
}

// SpanLag is one span name's delivery lag histogram.
type SpanLag struct {
	Buckets []uint64 // cumulative, one per LagBuckets() bound
	Count   uint64
	Sum     float64
}

// maxDropReasons caps the distinct reason label values.
const maxDropReasons = 16

var (
	spansExportedDesc = prometheus.NewDesc("podchron_spans_exported_total",
		"Spans the exporter delivered.", nil, nil)
	spansDroppedDesc = prometheus.NewDesc("podchron_spans_dropped_total",
		"Spans the exporter dropped, by reason.", []string{names.LabelReason}, nil)
	spanLagDesc = prometheus.NewDesc("podchron_span_delivery_lag_seconds",
		"How long after its end each span the collector accepted was delivered to it, by span kind (its name up to the first space): the tracer's share of a trace's freshness (waits for late facts, batching, upload), before the back end's own.",
		[]string{names.LabelSpan}, nil)
)

// SpanCollector exports a SpanStats, read at each scrape.
type SpanCollector struct {
	stats SpanStats

	mu      sync.Mutex
	reasons map[string]bool // admitted reason values; sticky, so "other" only grows
}

// NewSpanCollector reads s at each scrape; a nil s exports nothing.
func NewSpanCollector(s SpanStats) *SpanCollector {
	return &SpanCollector{stats: s, reasons: map[string]bool{}}
}

// Describe implements prometheus.Collector.
func (c *SpanCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- spansExportedDesc
	ch <- spansDroppedDesc
	if _, ok := c.stats.(SpanLags); ok {
		ch <- spanLagDesc
	}
}

// Collect implements prometheus.Collector.
func (c *SpanCollector) Collect(ch chan<- prometheus.Metric) {
	if c.stats == nil {
		return
	}
	exported, dropped := c.stats.Stats()
	ch <- prometheus.MustNewConstMetric(spansExportedDesc, prometheus.CounterValue, float64(exported))

	out := map[string]uint64{}
	c.mu.Lock()
	for _, reason := range slices.Sorted(maps.Keys(dropped)) {
		v := sanitizeLabelValue(reason)
		if v == "" {
			v = "unknown"
		}
		if !c.reasons[v] && len(c.reasons) < maxDropReasons {
			c.reasons[v] = true
		}
		if !c.reasons[v] {
			v = otherValue
		}
		out[v] += dropped[reason]
	}
	c.mu.Unlock()
	for reason, n := range out {
		ch <- prometheus.MustNewConstMetric(spansDroppedDesc, prometheus.CounterValue, float64(n), reason)
	}
	if l, ok := c.stats.(SpanLags); ok {
		bounds := l.LagBuckets()
		for name, h := range l.Lags() {
			if len(h.Buckets) != len(bounds) {
				continue
			}
			b := make(map[float64]uint64, len(bounds))
			for i, ub := range bounds {
				b[ub] = h.Buckets[i]
			}
			ch <- prometheus.MustNewConstHistogram(spanLagDesc, h.Count, h.Sum, b, sanitizeLabelValue(name))
		}
	}
}
