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
			{Node: "kernel", Length: 3, Blocked: 1500 * time.Millisecond, Delay: 12 * time.Second},
			{Node: "runtime"},
		},
		PendingFacts: 7,
	}
	c := NewPipelineCollector(func() PipelineStats { return stats })
	want := `
# HELP podchron_pipeline_pending_facts Facts the model holds until its sources' progress lets it handle them in order.
# TYPE podchron_pipeline_pending_facts gauge
podchron_pipeline_pending_facts 7
# HELP podchron_pipeline_queue_delay_seconds How long the input of a pipeline node the model handled last waited, from its source's stamp to its handling: how far the model is behind that node, by node.
# TYPE podchron_pipeline_queue_delay_seconds gauge
podchron_pipeline_queue_delay_seconds{node="kernel"} 12
podchron_pipeline_queue_delay_seconds{node="runtime"} 0
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
