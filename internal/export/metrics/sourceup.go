package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/podchron/podchron/internal/names"
)

var sourceUpDesc = prometheus.NewDesc("podchron_source_up",
	"1 if podchron's source (kernel, runtime, apiserver) is up, 0 if it is down; runtime or apiserver at 0 means degraded.",
	[]string{names.LabelSource}, nil)

// SourceCollector exports podchron_source_up from a Health, read at each
// scrape.
type SourceCollector struct {
	h *Health
}

// NewSourceCollector exports h's components.
func NewSourceCollector(h *Health) *SourceCollector { return &SourceCollector{h: h} }

// Describe implements prometheus.Collector.
func (c *SourceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- sourceUpDesc }

// Collect implements prometheus.Collector.
func (c *SourceCollector) Collect(ch chan<- prometheus.Metric) {
	_, comps := c.h.Status()
	for _, s := range comps {
		v := 0.0
		if s.Ready {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(sourceUpDesc, prometheus.GaugeValue, v, s.Name)
	}
}
