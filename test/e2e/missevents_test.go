package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/query"
	"github.com/podchron/podchron/internal/span"
)

// checkMissEvents reports the pods whose trace tells a correlation miss
// (a podchron.correlation_miss event on its root: which step it lacks, and
// why), over every trace of the run: each event names a reason the tracer
// declares, with a count.
func (e *env) checkMissEvents(t *testing.T, start time.Time) {
	c, err := query.New(query.Jaeger, e.jaeger.Query, nil)
	if err != nil {
		t.Errorf("miss events: %v", err)
		return
	}
	traces, err := c.Search(e.ctx, query.Search{Since: start, Limit: 5000})
	if err != nil {
		t.Errorf("miss events: %v", err)
		return
	}
	declared := map[string]bool{}
	for _, m := range names.MissReasons {
		declared[string(m.Miss)] = true
	}
	told := map[string]int64{}
	var pods []string
	for _, tr := range traces {
		for _, sp := range tr.Spans {
			if sp.Name != names.SpanPod {
				continue
			}
			var parts []string
			for _, ev := range sp.Events {
				if ev.Name != names.EventCorrelationMiss {
					continue
				}
				reason, _ := ev.Attr(names.MissReasonKey).(string)
				n, _ := ev.Attr(names.MissCount).(int64)
				if !declared[reason] || n < 1 {
					t.Errorf("trace %s: a miss event with reason %q, count %v: not a declared reason or no count", tr.ID, reason, n)
					continue
				}
				told[reason] += n
				parts = append(parts, fmt.Sprintf("%s %v ×%d", reason, ev.Attr(names.K8sContainerName), n))
			}
			if len(parts) > 0 {
				pods = append(pods, fmt.Sprintf("%v/%v (%s): %s", span.Lookup(sp.Resource, names.K8sNamespaceName),
					span.Lookup(sp.Resource, names.K8sPodName), tr.ID, strings.Join(parts, ", ")))
			}
		}
	}
	slices.Sort(pods)
	t.Logf("tracer: %d traces tell a correlation miss on their root: %s", len(pods), strings.Join(pods, "; "))
	// Beside the metric's count (a figure: the tracer restarts in the run
	// reset its counters, and a pod still running at the end has no root
	// out).
	for _, reason := range slices.Sorted(maps.Keys(told)) {
		q := fmt.Sprintf(`sum(podchron_correlation_misses_total{reason=%q})`, reason)
		if s, err := e.prom.Query(e.ctx, q); err == nil && len(s) > 0 {
			t.Logf("tracer: %s told in traces %d times; %s = %.0f now", reason, told[reason], q, s[0].Value)
		}
	}
}
