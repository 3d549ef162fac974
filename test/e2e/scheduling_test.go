package e2e

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ---- 58: unschedulable, then scheduled --------------------------------------

// A pod the scheduler cannot place at first (its nodeSelector names a label
// no node has) waits with FailedScheduling Events, written before the
// binding, before the tracer (whose pod watch selects its node) sees the
// pod at all. Once the node gets the label, the pod is bound and starts.
// Its trace carries the scheduler's words: k8s.FailedScheduling, then
// k8s.Scheduled, each once. The tracer's first Event watch on the pod
// starts from an Events resource version it had seen before the pod was
// created (internal/watcher/resume.go), not from a list of the
// namespace's Events: podchron_api_event_window_starts_total{start="resume"}
// grows, and no resumed start expired.
func (e *env) unschedulableThenScheduled(t *testing.T) {
	t.Parallel()
	const ns = "s58-unschedulable"
	const label = "podchron-e2e/s58"
	e.namespace(t, ns)
	nodes, err := e.cs.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("want the one node: %v (%d)", err, len(nodes.Items))
	}
	node := nodes.Items[0].Name
	resumed := func() float64 {
		s, err := e.prom.Query(e.ctx, `sum(podchron_api_event_window_starts_total{job="podchron",start="resume"})`)
		if err != nil || len(s) == 0 {
			return 0
		}
		return s[0].Value
	}
	before := resumed()
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "waits"},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{label: "yes"},
			Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	e.eventually(t, "FailedScheduling for "+pod.Name, time.Minute, func() error {
		evs, err := e.cs.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
		if err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "FailedScheduling" {
				return nil
			}
		}
		return errors.New("no FailedScheduling Event yet")
	})
	if out, err := e.cluster.Kubectl(e.ctx, "label", "node", node, label+"=yes"); err != nil {
		t.Fatalf("label the node: %v\n%s", err, out)
	}
	defer func() {
		if out, err := e.cluster.Kubectl(e.ctx, "label", "node", node, label+"-"); err != nil {
			t.Errorf("unlabel the node: %v\n%s", err, out)
		}
	}()
	e.waitPod(t, ns, pod.Name, "Ready", 2*time.Minute, ready)
	e.deleteAndWait(t, ns, pod.Name)

	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		root := pk.one("pod")
		if pk.err != nil {
			return pk.err
		}
		if n := countEvents(root, names.EventK8sPrefix+"FailedScheduling"); n < 1 {
			return fmt.Errorf("the root carries no k8s.FailedScheduling (written before the binding); events: %v", eventNames(root))
		}
		return eventsOnce(root, "Scheduled")
	})
	report(t, tr)
	e.metric(t, `sum(podchron_api_event_window_starts_total{job="podchron",start="resume"})`, time.Minute,
		func(v float64) bool { return v > before })
	e.metric(t, `sum(podchron_api_event_window_resumes_expired_total{job="podchron"})`, time.Minute,
		func(v float64) bool { return v == 0 })
}

func eventNames(s *backends.Span) []string {
	var out []string
	for _, ev := range s.Events {
		out = append(out, ev.Name)
	}
	return out
}
