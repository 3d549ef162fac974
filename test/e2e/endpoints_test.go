package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// serviceFor creates a ClusterIP Service selecting the pod's labels and
// waits until the endpoints controller lists the pod ready in its
// EndpointSlices.
func (e *env) serviceFor(t *testing.T, ns, name string, pod *corev1.Pod) {
	t.Helper()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Selector: pod.Labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := e.cs.CoreV1().Services(ns).Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("service %s/%s: %v", ns, name, err)
	}
	e.eventually(t, fmt.Sprintf("pod %s ready in Service %s's EndpointSlices", pod.Name, name), time.Minute, func() error {
		ready, err := e.endpointReady(ns, name, pod)
		if err == nil && !ready {
			err = errors.New("not listed ready")
		}
		return err
	})
}

// endpointReady reports whether Service name's EndpointSlices list the pod
// ready.
func (e *env) endpointReady(ns, name string, pod *corev1.Pod) (bool, error) {
	l, err := e.cs.DiscoveryV1().EndpointSlices(ns).List(e.ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return false, err
	}
	for _, es := range l.Items {
		for _, ep := range es.Endpoints {
			if ep.TargetRef != nil && ep.TargetRef.UID == pod.UID && (ep.Conditions.Ready == nil || *ep.Conditions.Ready) {
				return true, nil
			}
		}
	}
	return false, nil
}

// endpointsOf describes Service name's EndpointSlices for a failure's
// message: each endpoint's pod and conditions, and the slices' versions.
func (e *env) endpointsOf(ns, name string) string {
	l, err := e.cs.DiscoveryV1().EndpointSlices(ns).List(e.ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, es := range l.Items {
		fmt.Fprintf(&b, "%s@%s[", es.Name, es.ResourceVersion)
		for _, ep := range es.Endpoints {
			pod := "?"
			if ep.TargetRef != nil {
				pod = ep.TargetRef.Name + "/" + string(ep.TargetRef.UID)
			}
			c := ep.Conditions
			fmt.Fprintf(&b, " %s ready=%s serving=%s terminating=%s", pod, boolp(c.Ready), boolp(c.Serving), boolp(c.Terminating))
		}
		b.WriteString(" ] ")
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func boolp(v *bool) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprint(*v)
}

// spanEvent is the span's first event of that name with k8s.service.name
// svc.
func spanEvent(s *backends.Span, name, svc string) (backends.SpanEvent, error) {
	for _, ev := range s.Events {
		if ev.Name == name && fmt.Sprint(ev.Fields[names.K8sServiceName]) == svc {
			return ev, nil
		}
	}
	return backends.SpanEvent{}, fmt.Errorf("no %s event for Service %s on %s", name, svc, s.Name)
}

// serviceSteps checks a Service's two steps in a trace: the root's
// podchron.endpoint.ready, and the termination's
// podchron.endpoint.withdrawn, which it returns.
func serviceSteps(tr *backends.Trace, svc string) (ready, withdrawn backends.SpanEvent, err error) {
	root, err := only(tr, names.SpanPod)
	if err != nil {
		return ready, withdrawn, err
	}
	term, err := only(tr, names.SpanPodTermination)
	if err != nil {
		return ready, withdrawn, err
	}
	if ready, err = spanEvent(root, names.EventEndpointReady, svc); err != nil {
		return ready, withdrawn, err
	}
	if withdrawn, err = spanEvent(term, names.EventEndpointWithdrawn, svc); err != nil {
		return ready, withdrawn, err
	}
	if withdrawn.Time.Before(term.Start.Add(-time.Second)) || withdrawn.Time.After(term.End()) {
		return ready, withdrawn, fmt.Errorf("withdrawn at %s, outside the termination [%s, %s]", withdrawn.Time, term.Start, term.End())
	}
	if !ready.Time.Before(withdrawn.Time) {
		return ready, withdrawn, fmt.Errorf("listed ready at %s, not before its withdrawal at %s", ready.Time, withdrawn.Time)
	}
	return ready, withdrawn, nil
}

// ---- 62: a Service that withdraws the pod after its SIGTERM -----------------

// endpointsAfterSIGTERM: the pod behind a Service is deleted while the
// controller-manager is stalled: the kubelet's SIGTERM comes first, the
// endpoints controller withdraws the pod only when it resumes, 2.5 s later
// (on a busy control plane the same happens by a smaller margin, the race
// preStop sleep hooks exist for). The trace shows the withdrawal after the
// SIGTERM and the termination's verdict says so. Serial: the stall stops
// every controller.
func (e *env) endpointsAfterSIGTERM(t *testing.T) {
	const ns = "s62-endpoints-late"
	e.namespace(t, ns)
	// The app notes its SIGTERM in a host directory (so the stall lasts
	// from the signal, however late a loaded runtime sends it) and takes
	// 10 s to drain, so the pod is still there when the controllers resume
	// (2.5 s after the signal, up to 5 s more while a slow API server
	// answers the check below).
	dir := t.TempDir()
	app := container("app", sh(`trap 'echo > /signal/term; sleep 10; exit 0' TERM; while :; do sleep 1 & wait $!; done`)...)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "signal", MountPath: "/signal"}}
	grace := int64(60)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late", Labels: map[string]string{"app": "late"}},
		Spec: corev1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []corev1.Container{app},
			Volumes: []corev1.Volume{{Name: "signal", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir}}}}}})
	e.serviceFor(t, ns, "late", pod)
	resume, err := e.cluster.PauseControllerManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resume() })
	e.deletePod(t, ns, pod.Name)
	deleted := time.Now()
	for {
		if _, err := os.Stat(filepath.Join(dir, "term")); err == nil {
			break
		}
		if time.Since(deleted) > 45*time.Second {
			_ = resume()
			t.Fatal("the app got no SIGTERM within 45 s of its deletion")
		}
		time.Sleep(50 * time.Millisecond)
	}
	sigAfter := time.Since(deleted)
	time.Sleep(2500 * time.Millisecond)
	// The controllers are stopped, so the slices cannot change: an error
	// (a slow API server) is asked again; a pod no longer listed ready
	// means the stall did not hold, and the slices as they are then (the
	// controllers still stopped) say how.
	var stillListed bool
	var lerr error
	for asked := time.Now(); ; time.Sleep(200 * time.Millisecond) {
		if stillListed, lerr = e.endpointReady(ns, "late", pod); lerr == nil || time.Since(asked) > 5*time.Second {
			break
		}
	}
	var slices string
	if lerr != nil || !stillListed {
		slices = e.endpointsOf(ns, "late")
	}
	if err := resume(); err != nil {
		t.Fatal(err)
	}
	if lerr != nil || !stillListed {
		t.Fatalf("the Service no longer listed the pod ready while the controllers were stalled (%v; slices: %s): the scenario did not hold",
			lerr, slices)
	}
	t.Logf("scenario 62: the SIGTERM came %s after the deletion; the controller-manager resumed 2.5 s after it", sigAfter.Round(time.Millisecond))
	e.waitGone(t, ns, pod.Name, time.Minute)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		_, withdrawn, err := serviceSteps(tr, "late")
		if err != nil {
			return err
		}
		stop, err := only(tr, names.SpanContainerStop)
		if err != nil {
			return err
		}
		term, _ := only(tr, names.SpanPodTermination)
		if d := withdrawn.Time.Sub(stop.Start); d < 2*time.Second {
			return fmt.Errorf("withdrawn %s after the SIGTERM, want ≥ 2 s (the controllers were stalled 2.5 s)", d)
		}
		if v := term.Str(names.Verdict); !strings.Contains(v, "Service late withdrew it") || !strings.Contains(v, "after its SIGTERM") {
			return fmt.Errorf("verdict %q does not tell the late withdrawal", v)
		}
		return nil
	})
	report(t, tr)
	term, _ := only(tr, names.SpanPodTermination)
	t.Logf("scenario 62: %s", term.Str(names.Verdict))
	e.metric(t, fmt.Sprintf(`podchron_endpoint_withdrawn_after_signal_total{namespace=%q}`, ns), time.Minute,
		func(v float64) bool { return v == 1 })
}
