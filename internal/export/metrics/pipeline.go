package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// PipelineQueue is one node of the pipeline (a source sending into the
// model's input queue).
type PipelineQueue struct {
	Node string
	// Length: the inputs the node handed over (or is handing over) that
	// the model has not handled yet.
	Length int
	// Blocked: the time the node spent waiting on a full queue so far.
	Blocked time.Duration
	// Delay: how long the node's inputs waited, from their source's
	// stamp to their handling (a cumulative histogram).
	Delay Histogram
}

// Histogram is a cumulative histogram: Buckets maps each upper bound (in
// seconds) to the observations at most that.
type Histogram struct {
	Count   uint64
	Sum     float64
	Buckets map[float64]uint64
}

// PipelineStats are the pipeline's gauges at one time.
type PipelineStats struct {
	Queues []PipelineQueue
	// PendingFacts: inputs the model holds until its sources' progress
	// lets it handle them in order.
	PendingFacts int
}

var (
	pipelineQueueDesc = prometheus.NewDesc("podchron_pipeline_queue_length",
		"Inputs a pipeline node handed to the model's input queue that are not handled yet, by node.", []string{"node"}, nil)
	pipelineBlockedDesc = prometheus.NewDesc("podchron_pipeline_send_blocked_seconds_total",
		"Time a pipeline node spent waiting on a full input queue, by node.", []string{"node"}, nil)
	pipelineDelayDesc = prometheus.NewDesc("podchron_pipeline_queue_delay_seconds",
		"How long a pipeline node's inputs waited, from their source's stamp to the model handling them: how far the model was behind that node, by node.", []string{"node"}, nil)
	pipelinePendingDesc = prometheus.NewDesc("podchron_pipeline_pending_facts",
		"Facts the model holds until its sources' progress lets it handle them in order.", nil, nil)
)

// PipelineCollector exports the pipeline's gauges, read at each scrape.
type PipelineCollector struct {
	read func() PipelineStats
}

// NewPipelineCollector reads the pipeline's gauges with read (from
// (*pipeline.Stats).Snapshot in the daemon).
func NewPipelineCollector(read func() PipelineStats) *PipelineCollector {
	return &PipelineCollector{read: read}
}

// Describe implements prometheus.Collector.
func (c *PipelineCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- pipelineQueueDesc
	ch <- pipelineBlockedDesc
	ch <- pipelineDelayDesc
	ch <- pipelinePendingDesc
}

// Collect implements prometheus.Collector.
func (c *PipelineCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	for _, q := range s.Queues {
		node := sanitizeLabelValue(q.Node)
		ch <- prometheus.MustNewConstMetric(pipelineQueueDesc, prometheus.GaugeValue, float64(q.Length), node)
		ch <- prometheus.MustNewConstMetric(pipelineBlockedDesc, prometheus.CounterValue, q.Blocked.Seconds(), node)
		ch <- prometheus.MustNewConstHistogram(pipelineDelayDesc, q.Delay.Count, q.Delay.Sum, q.Delay.Buckets, node)
	}
	ch <- prometheus.MustNewConstMetric(pipelinePendingDesc, prometheus.GaugeValue, float64(s.PendingFacts))
}
