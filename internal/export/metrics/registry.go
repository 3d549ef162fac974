package metrics

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry makes a registry of its own (never the global one) holding cs.
//
// In the daemon (cmd/tracer), in short:
//
//	ln, err := metrics.Listen(addr) // before anything else: a busy port fails fast
//	// …
//	reg, err := metrics.NewRegistry(append([]prometheus.Collector{rec,
//		metrics.NewProbeCollector(probes.Counters, log),
//		metrics.NewReaderCollector(src.DecodeErrors.Load),
//		metrics.NewBuildInfoCollector(metrics.CurrentBuildInfo(version)),
//		metrics.NewSourceCollector(health),
//		metrics.NewSpanCollector(stats)}, metrics.RuntimeCollectors()...)...)
//	go func() { serveErr <- metrics.NewServer(reg, health, log).Serve(ctx, ln) }()
func NewRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register %T: %w", c, err)
		}
	}
	return reg, nil
}

// RuntimeCollectors are the Go runtime's and the process's standard
// metrics (go_*, process_*).
func RuntimeCollectors() []prometheus.Collector {
	return []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
}
