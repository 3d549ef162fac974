package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podchron/podchron/internal/export/metrics"
	"github.com/podchron/podchron/internal/pipeline"
)

// metricsRegistry holds the daemon's collectors: the recorder's, the
// sources' health, the spans' (stats may be nil: no exporter counts), the
// pipeline's, the build's and the Go runtime's, and more.
func metricsRegistry(rec *metrics.Recorder, health *metrics.Health, stats metrics.SpanStats, pipe *pipeline.Stats, more ...prometheus.Collector) (*prometheus.Registry, error) {
	collectors := append([]prometheus.Collector{rec}, more...)
	collectors = append(collectors,
		metrics.NewBuildInfoCollector(metrics.CurrentBuildInfo(version)),
		metrics.NewSourceCollector(health),
		metrics.NewPipelineCollector(pipelineStats(pipe)),
	)
	if stats != nil {
		collectors = append(collectors, metrics.NewSpanCollector(stats))
	}
	reg, err := metrics.NewRegistry(append(collectors, metrics.RuntimeCollectors()...)...)
	if err != nil {
		return nil, fmt.Errorf("metrics registry: %w", err)
	}
	return reg, nil
}

// pipelineStats reads the pipeline's gauges for the metrics.
func pipelineStats(st *pipeline.Stats) func() metrics.PipelineStats {
	return func() metrics.PipelineStats {
		s := st.Snapshot()
		out := metrics.PipelineStats{PendingFacts: s.PendingFacts}
		for _, n := range s.Nodes {
			delay := metrics.Histogram{Count: n.Delay.Count, Sum: n.Delay.Sum.Seconds(), Buckets: map[float64]uint64{}}
			for i, b := range pipeline.DelayBounds {
				delay.Buckets[b.Seconds()] = n.Delay.Buckets[i]
			}
			out.Queues = append(out.Queues, metrics.PipelineQueue{Node: n.Node, Length: n.Queued, Blocked: n.Blocked, Delay: delay})
		}
		return out
	}
}

// serveMetrics serves the metrics and health on ln until ctx is done; the
// channel gets the server's end (closed at once without ln).
func serveMetrics(ctx context.Context, ln net.Listener, reg *prometheus.Registry, health *metrics.Health, log *slog.Logger) <-chan error {
	serveErr := make(chan error, 1)
	if ln == nil {
		close(serveErr)
		return serveErr
	}
	srv := metrics.NewServer(reg, health, log)
	go func() { serveErr <- srv.Serve(ctx, ln) }()
	return serveErr
}
