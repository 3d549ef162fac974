package metrics

import (
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"

	"github.com/prometheus/client_golang/prometheus"
)

// CountersFunc reads the kernel probes' per-type counters:
// (*probe.Probes).Counters in the daemon, a fake in tests.
type CountersFunc func() (map[kernel.EventType]kernel.Counter, error)

var (
	probeEventsDesc = prometheus.NewDesc("podchron_probe_events_total",
		"Events the kernel probes sent to the ring buffer, by event type.", []string{names.LabelType}, nil)
	probeLostDesc = prometheus.NewDesc("podchron_probe_events_lost_total",
		"Events the kernel probes dropped because the ring buffer was full, by event type.", []string{names.LabelType}, nil)
	probeUpDesc = prometheus.NewDesc("podchron_probe_up",
		"1 if the kernel probe counters could be read at this scrape, 0 if not.", nil, nil)
)

var errProbesNotLoaded = errors.New("kernel probes not loaded")

// ProbeCollector exports the kernel probes' counters, read at each scrape.
type ProbeCollector struct {
	read CountersFunc
	log  *slog.Logger

	mu     sync.Mutex
	failed bool // the last read failed: log the next failure at debug only
}

// NewProbeCollector reads counters with read; a nil read exports
// podchron_probe_up 0 (probes not loaded). A nil log uses slog.Default().
func NewProbeCollector(read CountersFunc, log *slog.Logger) *ProbeCollector {
	if log == nil {
		log = slog.Default()
	}
	return &ProbeCollector{read: read, log: log}
}

// Describe implements prometheus.Collector.
func (c *ProbeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- probeEventsDesc
	ch <- probeLostDesc
	ch <- probeUpDesc
}

// Collect implements prometheus.Collector. Every known event type is
// exported (0 until it is seen), so rate() works from the first scrape.
func (c *ProbeCollector) Collect(ch chan<- prometheus.Metric) {
	counters, err := c.readCounters()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(probeUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(probeUpDesc, prometheus.GaugeValue, 1)
	types := kernel.EventTypes()
	for t := range counters {
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	for _, t := range types {
		v := counters[t]
		name := sanitizeLabelValue(t.String())
		ch <- prometheus.MustNewConstMetric(probeEventsDesc, prometheus.CounterValue, float64(v.Emitted), name)
		ch <- prometheus.MustNewConstMetric(probeLostDesc, prometheus.CounterValue, float64(v.Lost), name)
	}
}

// readCounters calls read, logging a failure at warning level once per run
// of failures so a broken map does not flood the log at every scrape.
func (c *ProbeCollector) readCounters() (map[kernel.EventType]kernel.Counter, error) {
	var (
		counters map[kernel.EventType]kernel.Counter
		err      error
	)
	if c.read == nil {
		err = errProbesNotLoaded
	} else {
		counters, err = c.read()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err != nil && !c.failed:
		c.failed = true
		c.log.Warn("cannot read kernel probe counters; exporting podchron_probe_up 0", "err", err)
	case err != nil:
		c.log.Debug("cannot read kernel probe counters", "err", err)
	case c.failed:
		c.failed = false
		c.log.Info("kernel probe counters readable again")
	}
	return counters, err
}
