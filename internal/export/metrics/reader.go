package metrics

import "github.com/prometheus/client_golang/prometheus"

var decodeErrorsDesc = prometheus.NewDesc("podchron_decode_errors_total",
	"Ring buffer records that could not be decoded and were skipped.", nil, nil)

// ReaderCollector exports the ring buffer reader's health, read at each
// scrape.
type ReaderCollector struct {
	decodeErrors func() uint64
}

// NewReaderCollector reads the decode error count with decodeErrors:
// (*probe.RingSource).DecodeErrors.Load in the daemon. A nil func exports 0.
func NewReaderCollector(decodeErrors func() uint64) *ReaderCollector {
	return &ReaderCollector{decodeErrors: decodeErrors}
}

// Describe implements prometheus.Collector.
func (c *ReaderCollector) Describe(ch chan<- *prometheus.Desc) { ch <- decodeErrorsDesc }

// Collect implements prometheus.Collector.
func (c *ReaderCollector) Collect(ch chan<- prometheus.Metric) {
	var n uint64
	if c.decodeErrors != nil {
		n = c.decodeErrors()
	}
	ch <- prometheus.MustNewConstMetric(decodeErrorsDesc, prometheus.CounterValue, float64(n))
}
