package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"
)

// ---- 45: readiness lost and regained after the start-up -----------------------

// A container whose exec readiness probe checks a file the container
// removes 20 s after it starts and puts back 8 s later: the pod is Ready,
// loses it, regains it. The trace has one pod.not_ready span (ERROR) under
// the root, for the app, with what the probe said; the start-up is OK. The
// pod is behind a Service: the episode has the Service's withdrawal (from
// then on it sent the pod no traffic), the termination its second one.
// Prometheus has the episode's length, and counts the Service's withdrawal
// as late exactly when the episode's message says it was (1 s or more).
func (e *env) readinessLostAndRegained(t *testing.T) {
	t.Parallel()
	const ns = "s45-readiness"
	e.namespace(t, ns)
	app := container("app", sh(`trap 'exit 0' TERM; touch /tmp/ready; sleep 20 & wait $!; rm /tmp/ready; sleep 8 & wait $!; touch /tmp/ready; `+gracefulApp)...)
	app.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}},
		PeriodSeconds: 1, FailureThreshold: 1}
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "blip", Labels: map[string]string{"app": "blip"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	e.serviceFor(t, ns, "blip", pod)
	if p, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, pod.Name, metav1.GetOptions{}); err != nil || !podReady(p) {
		t.Fatalf("the pod lost Ready before its Service listed it (err %v): the scenario did not hold", err)
	}
	e.waitPod(t, ns, pod.Name, "not Ready", time.Minute, func(p *corev1.Pod) error {
		if podReady(p) {
			return errors.New("still Ready")
		}
		return nil
	})
	e.waitPod(t, ns, pod.Name, "Ready again", time.Minute, ready)
	e.deleteAndWait(t, ns, pod.Name)

	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		root := pk.one(names.SpanPod)
		st := pk.one(names.SpanPodStartup)
		nr := pk.one(names.SpanPodNotReady)
		if pk.err != nil {
			return pk.err
		}
		if st.Error || nr.ParentID != root.SpanID || !nr.Error {
			return fmt.Errorf("start-up error=%v, not_ready parent %s (root %s) error=%v", st.Error, nr.ParentID, root.SpanID, nr.Error)
		}
		if nr.Str(names.ReadinessNotReady) != "app" {
			return fmt.Errorf("not_ready names %q, want app", nr.Str(names.ReadinessNotReady))
		}
		if out, cmd := nr.Str(names.ReadinessProbeOutput), nr.Str(names.ProcessCommandArgs); !strings.Contains(out, "/tmp/ready") && !strings.Contains(cmd, "/tmp/ready") {
			return fmt.Errorf("not_ready says nothing of the probe: output %q, command %q", out, cmd)
		}
		if d := nr.Duration; d < 3*time.Second || d > 30*time.Second {
			return fmt.Errorf("not Ready for %s, want about 8 s", d)
		}
		out, err := spanEvent(nr, names.EventEndpointWithdrawn, "blip")
		if err != nil {
			return err
		}
		if out.Time.Before(nr.Start.Add(-time.Second)) || out.Time.After(nr.End()) {
			return fmt.Errorf("withdrawn at %s, outside the episode [%s, %s]", out.Time, nr.Start, nr.End())
		}
		if _, _, err := serviceSteps(tr, "blip"); err != nil {
			return fmt.Errorf("the termination's withdrawal: %w", err)
		}
		return nil
	})
	report(t, tr)
	// One episode measured, in the 5-10 s bucket's range (about 8 s).
	e.metric(t, fmt.Sprintf(`podchron_pod_not_ready_duration_seconds_count{namespace=%q}`, ns), time.Minute,
		func(v float64) bool { return v == 1 })
	e.metric(t, fmt.Sprintf(`podchron_pod_not_ready_duration_seconds_bucket{namespace=%q,le="2.5"}`, ns), time.Minute,
		func(v float64) bool { return v == 0 })
	// The Service's delay counted as the episode's message tells it: 1 when
	// it says the Service withdrew the pod late (1 s or more: a loaded
	// control plane), else 0 (the series made at zero with the namespace).
	pk := &pick{tr: tr}
	msg := pk.one(names.SpanPodNotReady).Str("otel.status_description")
	late := 0.0
	if strings.Contains(msg, "Service blip withdrew it") {
		late = 1
	}
	t.Logf("the episode's message %q: %v late withdrawal", msg, late)
	e.metric(t, fmt.Sprintf(`podchron_endpoint_withdrawn_after_not_ready_total{namespace=%q}`, ns), time.Minute,
		func(v float64) bool { return v == late })
}

// ---- 46: kubectl debug ------------------------------------------------------------

// kubectl debug adds an ephemeral container to a running pod; it exits 3.
// The trace has it as container.ephemeral (not an error, no container.run),
// one OK start-up, and nothing in the trace errored by the debug exit.
func (e *env) kubectlDebug(t *testing.T) {
	t.Parallel()
	const ns = "s46-debug"
	e.namespace(t, ns)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "debugged"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	if out, err := e.cluster.Kubectl(e.ctx, "debug", "-n", ns, pod.Name, "--image="+image, "--image-pull-policy=Never",
		"-c", "debugger", "--", "sh", "-c", "sleep 2; exit 3"); err != nil {
		t.Fatalf("kubectl debug: %v\n%s", err, out)
	}
	e.waitPod(t, ns, pod.Name, "debugger ended", time.Minute, func(p *corev1.Pod) error {
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == "debugger" && s.State.Terminated != nil {
				return nil
			}
		}
		return errors.New("debugger not terminated")
	})
	e.deleteAndWait(t, ns, pod.Name)

	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		pk.one(names.SpanPod)
		pk.one(names.SpanPodStartup)
		dbg := pk.one(names.SpanContainerEphemeral)
		pk.one(names.SpanContainerRun) // the app's only
		if pk.err != nil {
			return pk.err
		}
		if dbg.Str(names.K8sContainerName) != "debugger" || dbg.Error {
			return fmt.Errorf("ephemeral span: %s error=%v", dbg.Str(names.K8sContainerName), dbg.Error)
		}
		for _, s := range tr.Spans {
			if s.Error {
				return fmt.Errorf("%s errored in a trace whose only failure is the debug session's exit 3", s.Name)
			}
			if s.Name == names.SpanContainerStart && s.Str(names.K8sContainerName) == "debugger" {
				return errors.New("the debug container's start is in the start-up")
			}
		}
		return nil
	})
	report(t, tr)
}

// ---- 47: readiness gates ---------------------------------------------------------

// A pod with a readiness gate nobody sets: its containers are ready, the
// pod is not. 3 s later the test sets the gate's condition True through
// the API (as a load balancer's controller would): the start-up is OK and
// has an event naming the gate it waited for.
func (e *env) readinessGate(t *testing.T) {
	t.Parallel()
	const ns = "s47-gates"
	const gate = "example.com/lb-registered"
	e.namespace(t, ns)
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gated"},
		Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: gate}},
			Containers: []corev1.Container{container("app", sh(gracefulApp)...)}}})
	e.waitPod(t, ns, pod.Name, "containers ready", 2*time.Minute, func(p *corev1.Pod) error {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.ContainersReady && c.Status == corev1.ConditionTrue {
				if podReady(p) {
					return errors.New("Ready despite its gate")
				}
				return nil
			}
		}
		return errors.New("containers not ready")
	})
	time.Sleep(3 * time.Second)
	p, err := e.cs.CoreV1().Pods(ns).Get(e.ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: gate, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()})
	if _, err := e.cs.CoreV1().Pods(ns).UpdateStatus(e.ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("set the gate's condition: %v", err)
	}
	e.waitPod(t, ns, pod.Name, "Ready", time.Minute, ready)
	e.deleteAndWait(t, ns, pod.Name)

	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		st := pk.one(names.SpanPodStartup)
		if pk.err != nil {
			return pk.err
		}
		if st.Error {
			return errors.New("start-up errored")
		}
		for _, ev := range st.Events {
			if ev.Name == names.EventReadinessGatesWaited {
				if msg := fmt.Sprint(ev.Fields[names.Message]); !strings.Contains(msg, gate) {
					return fmt.Errorf("gate event says %q", msg)
				}
				if w, _ := ev.Fields[names.ReadinessGatesWaitSeconds].(float64); w < 1 {
					return fmt.Errorf("gate wait %v, want about 3 s", ev.Fields[names.ReadinessGatesWaitSeconds])
				}
				return nil
			}
		}
		return fmt.Errorf("no %s event on the start-up: %v", names.EventReadinessGatesWaited, st.Events)
	})
	report(t, tr)
}
