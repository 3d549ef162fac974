package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestPipelineCollector(t *testing.T) {
	stats := PipelineStats{
		Queues: []PipelineQueue{
			{Node: "kernel", Length: 3, Blocked: 1500 * time.Millisecond,
				Delay: Histogram{Count: 10, Sum: 12.5, Buckets: map[float64]uint64{0.001: 2, 1: 7, 10: 9}}},
			{Node: "runtime"},
		},
		PendingFacts: 7,
	}
	c := NewPipelineCollector(func() PipelineStats { return stats })
	want := `
# HELP podchron_pipeline_pending_facts Facts the model holds until its sources' progress lets it handle them in order.
# TYPE podchron_pipeline_pending_facts gauge
podchron_pipeline_pending_facts 7
# HELP podchron_pipeline_queue_delay_seconds How long a pipeline node's inputs waited, from their source's stamp to the model handling them: how far the model was behind that node, by node.
# TYPE podchron_pipeline_queue_delay_seconds histogram
podchron_pipeline_queue_delay_seconds_bucket{node="kernel",le="0.001"} 2
podchron_pipeline_queue_delay_seconds_bucket{node="kernel",le="1"} 7
podchron_pipeline_queue_delay_seconds_bucket{node="kernel",le="10"} 9
podchron_pipeline_queue_delay_seconds_bucket{node="kernel",le="+Inf"} 10
podchron_pipeline_queue_delay_seconds_sum{node="kernel"} 12.5
podchron_pipeline_queue_delay_seconds_count{node="kernel"} 10
podchron_pipeline_queue_delay_seconds_bucket{node="runtime",le="+Inf"} 0
podchron_pipeline_queue_delay_seconds_sum{node="runtime"} 0
podchron_pipeline_queue_delay_seconds_count{node="runtime"} 0
# HELP podchron_pipeline_queue_length Inputs a pipeline node handed to the model's input queue that are not handled yet, by node.
# TYPE podchron_pipeline_queue_length gauge
podchron_pipeline_queue_length{node="kernel"} 3
podchron_pipeline_queue_length{node="runtime"} 0
# HELP podchron_pipeline_send_blocked_seconds_total Time a pipeline node spent waiting on a full input queue, by node.
# TYPE podchron_pipeline_send_blocked_seconds_total counter
podchron_pipeline_send_blocked_seconds_total{node="kernel"} 1.5
podchron_pipeline_send_blocked_seconds_total{node="runtime"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint %s: %s", p.Metric, p.Text)
	}
}
