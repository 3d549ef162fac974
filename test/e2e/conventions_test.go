package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"
)

// ---- 29: conventions, filters, redacted command lines ---------------------------

// A Deployment's pod, with a kubectl exec carrying a password, is traced
// with the semantic conventions' resource (k8s.cluster.name, the exported
// pod label, k8s.replicaset.*, k8s.deployment.name), successes left Unset,
// and the password masked. A pod of the excluded namespace and a pod that
// opts out (podchron.io/trace: "false") leave no trace and no metric.
func (e *env) conventionsAndFilters(t *testing.T) {
	t.Parallel()
	const ns = "s29-conventions"
	e.namespace(t, ns)
	e.namespace(t, excludedNamespace)

	// The filtered pods first: they must be gone (and their would-be
	// traces due) by the time the traced pod's trace is complete.
	hidden := e.readyPod(t, excludedNamespace, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hidden"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	quiet := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "quiet",
		Annotations: map[string]string{fact.OptOutAnnotation: "false"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	e.deleteAndWait(t, excludedNamespace, hidden.Name)
	e.deleteAndWait(t, ns, quiet.Name)

	one := int32(1)
	labels := map[string]string{"app": "web"}
	dep, err := e.cs.AppsV1().Deployments(ns).Create(e.ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	e.eventually(t, "the Deployment's pod Ready", 2*time.Minute, func() error {
		l, err := e.cs.CoreV1().Pods(ns).List(e.ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil || len(l.Items) != 1 || !podReady(&l.Items[0]) {
			return fmt.Errorf("pods %d, err %w", len(l.Items), err)
		}
		pod = l.Items[0]
		return nil
	})
	if out, err := e.cluster.Kubectl(e.ctx, "exec", "-n", ns, pod.Name, "--", "sh", "-c", "true", "--password=hunter2"); err != nil {
		t.Fatalf("kubectl exec: %v: %s", err, out)
	}
	rs := ""
	for _, o := range pod.OwnerReferences {
		if o.Kind == "ReplicaSet" {
			rs = o.Name
		}
	}
	if err := e.cs.AppsV1().Deployments(ns).Delete(e.ctx, dep.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, ns, pod.Name, time.Minute)

	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		root := pk.one(names.SpanPod)
		st := pk.one(names.SpanPodStartup)
		if pk.err != nil {
			return pk.err
		}
		for k, want := range map[string]string{names.K8sClusterName: clusterName, names.K8sPodLabelPrefix + "app": "web",
			names.K8sReplicaSetName: rs, names.K8sDeploymentName: "web", names.K8sNamespaceName: ns} {
			if got := fmt.Sprint(root.Resource[k]); got != want {
				return fmt.Errorf("resource %s = %q, want %q (%v)", k, got, want, root.Resource)
			}
		}
		if _, ok := root.Resource[names.HostName]; ok {
			return fmt.Errorf("resource has host.name %v: the tracer's own", root.Resource[names.HostName])
		}
		// Success is left Unset: no otel.status_code at all.
		for _, s := range []*backends.Span{root, st} {
			if c, ok := s.Tags["otel.status_code"]; ok {
				return fmt.Errorf("%s: otel.status_code %v on a success, want none (Unset)", s.Name, c)
			}
		}
		var exec *backends.Span
		for _, s := range tr.Spans {
			if s.Name == names.SpanContainerExec && strings.Contains(s.Str(names.ProcessCommandArgs), "--password") {
				exec = s
			}
		}
		if exec == nil {
			return errors.New("no container.exec span for the kubectl exec")
		}
		if args := exec.Str(names.ProcessCommandArgs); !strings.Contains(args, "--password=***") {
			return fmt.Errorf("exec args %s, want the password masked", args)
		}
		b, _ := json.Marshal(tr)
		if strings.Contains(string(b), "hunter2") {
			return errors.New("the password is in the trace")
		}
		return nil
	})
	report(t, tr)

	// The filtered pods: no trace, no metric. Their traces would have been
	// complete before this one (they ended first).
	for _, p := range []*corev1.Pod{hidden, quiet} {
		id := span.TraceIDForPod(string(p.UID)).String()
		if got, err := e.jaeger.Trace(e.ctx, id); !errors.Is(err, backends.ErrNoTrace) {
			t.Errorf("pod %s/%s is filtered out, yet Jaeger has its trace (%v): %v", p.Namespace, p.Name, err, got)
		}
	}
	q := fmt.Sprintf(`count({__name__=~"podchron_.+", namespace=%q})`, excludedNamespace)
	if s, err := e.prom.Query(e.ctx, q); err != nil || len(s) != 0 {
		t.Errorf("%s = %v (%v), want no series for the excluded namespace", q, s, err)
	}
}
