package e2e

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"
)

// outageDrops: the spans scenario 59 made the tracer drop on purpose, and
// the tracer pod that counted them (checkTracerHealth allows them while
// that pod is the tracer).
type outageDrops struct {
	tracer  string
	dropped float64
}

// ---- 59: the collector away longer than the exporter retries -------------------

// collectorOutage: the collector goes away while a pod lives, for longer
// than the tracer retries a batch (30 s), so a span of the pod (a kubectl
// exec's container.exec) is dropped and counted (export_failed). When the
// pod is gone, its root, sent after the collector came back, tells the
// loss on the pod's own trace: a podchron.spans_dropped event with the
// reason and the count, and Jaeger holds no container.exec. Run alone:
// every pod's spans of the outage are lost.
func (e *env) collectorOutage(t *testing.T) {
	const ns = "s59-collector-outage"
	const failed = `sum(podchron_spans_dropped_total{reason="export_failed"})`
	e.namespace(t, ns)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "across"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	uid := string(pod.UID)
	// Its start-up is out before the outage: nothing of it is queued.
	e.trace(t, uid, time.Minute, func(tr *backends.Trace) error {
		if len(tr.Named(names.SpanPodStartup)) == 0 {
			return errors.New("no pod.startup yet")
		}
		return nil
	})
	before := e.metric(t, failed, time.Minute, func(float64) bool { return true })
	if err := e.otelcol.Down(); err != nil {
		t.Fatalf("stop the collector: %v", err)
	}
	down := time.Now()
	if out, err := e.cluster.Kubectl(e.ctx, "exec", "-n", ns, pod.Name, "-c", "app", "--", "true"); err != nil {
		t.Fatalf("kubectl exec: %v\n%s", err, out)
	}
	// The exec's batch is retried for 30 s (otlp.DefaultMaxRetryTime),
	// then dropped and counted.
	after := e.metric(t, failed, 2*time.Minute, func(v float64) bool { return v > before })
	if err := e.otelcol.Up(e.ctx); err != nil {
		t.Fatalf("start the collector again: %v", err)
	}
	t.Logf("scenario 59: collector away for %s; export_failed %v -> %v", time.Since(down).Round(time.Millisecond), before, after)
	if tp, err := e.tracerPod(""); err == nil {
		all := e.metric(t, `sum(podchron_spans_dropped_total)`, time.Minute, func(float64) bool { return true })
		e.outage = outageDrops{tracer: tp.Name, dropped: all}
	}
	e.deletePod(t, ns, pod.Name)
	e.waitGone(t, ns, pod.Name, time.Minute)
	tr := e.trace(t, uid, 2*time.Minute, func(tr *backends.Trace) error {
		root, err := only(tr, names.SpanPod)
		if err != nil {
			return err
		}
		var told int64
		for _, ev := range root.Events {
			if ev.Name != names.EventSpansDropped || ev.Fields[names.DropReason] != "export_failed" {
				continue
			}
			switch n := ev.Fields[names.DropCount].(type) {
			case int64:
				told += n
			case float64:
				told += int64(n)
			}
		}
		if told < 1 {
			return fmt.Errorf("the root tells %d spans dropped (export_failed), want at least the exec's", told)
		}
		if n := len(tr.Named(names.SpanContainerExec)); n != 0 {
			return fmt.Errorf("%d container.exec spans in Jaeger: the exec's span was sent during the outage", n)
		}
		return nil
	})
	report(t, tr)
}
