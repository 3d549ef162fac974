package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/export/metrics"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/pipeline"
)

// The pipeline's gauges as the daemon exports them, from a running
// pipeline whose consumer is stuck: the runtime node's inputs in flight
// and the time it has been blocked on the full queue.
func TestPipelineMetrics(t *testing.T) {
	gate := make(chan struct{})
	src := func(ctx context.Context, out chan<- fact.Input) error {
		for range 5 {
			select {
			case out <- fact.Input{Time: time.Now(), Tick: true}:
			case <-ctx.Done():
				return nil
			}
		}
		<-ctx.Done()
		return nil
	}
	var st pipeline.Stats
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- pipeline.Run(ctx, pipeline.Config{
			Sources:    map[string]pipeline.Source{pipeline.SourceRuntime: src},
			Correlator: correlate.New(correlate.Config{}),
			Tick:       time.Hour,
			Buffer:     1,
			Stats:      &st,
			Heartbeat:  func() { <-gate },
		})
	}()
	defer func() {
		close(gate)
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	c := metrics.NewPipelineCollector(pipelineStats(&st))
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	blocked := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "podchron_pipeline_send_blocked_seconds_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return 0
	}
	deadline := time.Now().Add(5 * time.Second)
	for blocked() < 0.05 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if b := blocked(); b < 0.05 {
		t.Errorf("podchron_pipeline_send_blocked_seconds_total %g after a stuck consumer, want at least 0.05", b)
	}
	// One input in the model, one in the queue, one held by the node.
	want := `
# HELP podchron_pipeline_pending_facts Facts the model holds until its sources' progress lets it handle them in order.
# TYPE podchron_pipeline_pending_facts gauge
podchron_pipeline_pending_facts 0
# HELP podchron_pipeline_queue_length Inputs a pipeline node handed to the model's input queue that are not handled yet, by node.
# TYPE podchron_pipeline_queue_length gauge
podchron_pipeline_queue_length{node="runtime"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "podchron_pipeline_queue_length", "podchron_pipeline_pending_facts"); err != nil {
		t.Error(err)
	}
}
