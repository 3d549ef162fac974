package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"
)

// ---- 35-37: kills the kubelet decides on its own ---------------------------------

// firstRun is the first attempt's container.run of a container (no
// restart count).
func firstRun(tr *backends.Trace, ctr string) (*backends.Span, error) {
	return only(tr, names.SpanContainerRun, ctrName(ctr), func(s *backends.Span) bool {
		return s.Str(names.K8sContainerRestartCount) == ""
	})
}

// postStartFailure: a postStart exec hook that exits 1. The kubelet kills
// the container (its app exits 0 on SIGTERM) and starts it again: a kubelet
// restart naming the hook, never a completion.
func (e *env) postStartFailure(t *testing.T) {
	t.Parallel()
	const ns = "s35-poststart-fails"
	e.namespace(t, ns)
	app := container("app", sh(gracefulApp)...)
	app.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sh", "-c", "exit 1"}}}}
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hookfail"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	e.waitPod(t, ns, pod.Name, "restarted after its postStart hook failed", 2*time.Minute, restarted(1))
	e.wantKubeletRestart(t, ns, pod, names.KubeletRestartPostStart)
}

// networkProbeRestarts: liveness probes the kubelet runs over the network
// (httpGet and tcpSocket), which the kernel never sees, to a listener the
// container runs (busybox httpd) and stops after a while: the probes pass
// (the readiness probe on the same port makes the pod Ready), then fail with
// "connection refused" and the kubelet restarts the container.
//
// The pods use the host's network: this cluster's CNI bridge has no address
// on the host (isGateway false), so the kubelet's dial to a pod IP leaves by
// the default route, and this machine's egress accepts every TCP connection
// and answers HTTP 404 (a tcpSocket probe to port 1 of a pod never failed;
// an httpGet one failed with 404 from outside the pod). With hostNetwork the
// pod IP is the node's, and the probes reach the container.
//
// The third pod spends the kubelet's event budget (client-go's spam filter:
// 25 per pod and event type, then one per 5 minutes): 13 containers give 39
// Normal events (Pulled, Created, Started) and a readiness probe on a closed
// port gives a Warning (Unhealthy) every second; when its liveness probe
// fails ~35 s after the start, the Killing (Normal) and the liveness
// Unhealthy (Warning) events are dropped. The test checks the API has
// neither, and the run is still a liveness restart (from the spec's probe).
func (e *env) networkProbeRestarts(t *testing.T) {
	t.Parallel()
	const ns = "s36-network-probes"
	e.namespace(t, ns)
	for _, tc := range []struct {
		name      string
		port      int32
		listen    int // seconds the listener runs
		throttled bool
	}{
		// Ready ~3 s after the start, then quiet: past the watcher's
		// 30 s settle its event window is closed when the liveness probe
		// fails (~47 s), so the Killing event comes with the window the
		// kubelet's stop opens.
		{"http", 18361, 45, false},
		{"tcp", 18362, 12, false},
		{"tcp-throttled", 18363, 60, true}, // 60 s of readiness failures: ≥ 25 Unhealthy even with probes late under load (35 s fell short once)
	} {
		pod := e.probedPod(t, ns, tc.name, tc.port, tc.listen, tc.throttled)
		e.waitPod(t, ns, pod.Name, "restarted by its "+tc.name+" liveness probe", time.Duration(tc.listen)*time.Second+2*time.Minute, restarted(1))
		if tc.throttled {
			e.wantNoEvents(t, ns, pod, "Killing", "Unhealthy:Liveness")
		}
		tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
			r, err := firstRun(tr, "app")
			if err != nil {
				return err
			}
			msg := r.Str(names.Message)
			if !strings.Contains(strings.ToLower(msg), "liveness") {
				return fmt.Errorf("run names no liveness probe: %q", msg)
			}
			if !tc.throttled && strings.Contains(msg, "no event named it") {
				// The pod was Ready and quiet: no event window was open
				// on it when the kubelet killed the container. The window
				// the stop opened (watcher.Want) must bring the kubelet's
				// words (Killing, Unhealthy) before the run is decided.
				return fmt.Errorf("run names the spec's probe, not the kubelet's events: %q", msg)
			}
			return attr(r, names.ExitCause, string(names.CauseLivenessRestart))
		})
		report(t, tr)
		r, _ := firstRun(tr, "app")
		if r != nil {
			t.Logf("scenario 36 %s: run %s: %s", tc.name, r.Str(names.ExitCause), r.Str(names.Message))
		}
		e.deletePod(t, ns, pod.Name)
	}
}

// probedPod creates a host-network pod whose app serves HTTP on port for
// listen seconds then stops listening; its liveness probe (httpGet for
// "http", else tcpSocket) and readiness probe point at that port, Ready
// once they pass. A throttled pod has 12 more containers and a readiness
// probe on a closed port instead, to spend the kubelet's event budget.
func (e *env) probedPod(t *testing.T, ns, name string, port int32, listen int, throttled bool) *corev1.Pod {
	t.Helper()
	app := container("app", sh(fmt.Sprintf(`trap 'exit 0' TERM; mkdir -p /www; echo ok > /www/healthz; httpd -f -p %d -h /www & h=$!; `+
		`sleep %d & wait $!; kill $h; while :; do sleep 1 & wait $!; done`, port, listen))...)
	handler := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}
	if name == "http" {
		handler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(port)}}
	}
	app.LivenessProbe = &corev1.Probe{ProbeHandler: handler, InitialDelaySeconds: 2, PeriodSeconds: 1, FailureThreshold: 2}
	app.ReadinessProbe = &corev1.Probe{ProbeHandler: handler, PeriodSeconds: 1}
	ctrs := []corev1.Container{app}
	if throttled {
		app.ReadinessProbe.ProbeHandler = corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port + 6)}}
		ctrs = []corev1.Container{app}
		for i := range 12 {
			ctrs = append(ctrs, container(fmt.Sprintf("filler%d", i), sh(gracefulApp)...))
		}
	}
	spec := corev1.PodSpec{HostNetwork: true, Containers: ctrs}
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec})
	if !throttled {
		e.waitPod(t, ns, pod.Name, "Ready (its probes reach the container)", time.Minute, ready)
	}
	return pod
}

// wantNoEvents fails the test if the API has an event of the pod with one
// of the reasons ("Reason" or "Reason:message prefix"): the kubelet's
// recorder dropped them, as the scenario needs.
func (e *env) wantNoEvents(t *testing.T, ns string, pod *corev1.Pod, reasons ...string) {
	t.Helper()
	evs, err := e.cs.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID)})
	if err != nil {
		t.Fatalf("events of %s: %v", pod.Name, err)
	}
	counts := map[string]int32{}
	for _, ev := range evs.Items {
		counts[ev.Type+"/"+ev.Reason] += max(ev.Count, 1)
		for _, r := range reasons {
			reason, prefix, _ := strings.Cut(r, ":")
			if ev.Reason == reason && strings.HasPrefix(ev.Message, prefix) {
				t.Fatalf("the kubelet recorded %s %q: its event budget was not spent, the scenario shows nothing", ev.Reason, ev.Message)
			}
		}
	}
	t.Logf("scenario 36 %s: events in the API (type/reason: count): %v; no %v", pod.Name, counts, reasons)
}

// emptyDirEviction: a pod writes more than its emptyDir's sizeLimit; the
// kubelet's eviction manager (every 10 s, on volume stats it refreshes
// about once a minute) evicts it alone: Failed/Evicted with a message, no
// DisruptionTarget, grace 0 (the kubelet's 2 s minimum); the first run
// showed the eviction ~50 s after the write. Cause evicted, the
// message on pod.termination, no overrun.
func (e *env) emptyDirEviction(t *testing.T) {
	t.Parallel()
	const ns = "s37-emptydir-eviction"
	e.namespace(t, ns)
	limit := resource.MustParse("1Mi")
	app := container("app", sh(`dd if=/dev/zero of=/scratch/fill bs=1024 count=4096; `+gracefulApp)...)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "filler"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}, Volumes: []corev1.Volume{{Name: "scratch",
			VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &limit}}}}}})
	// Kubernetes 1.34 here wrote phase Succeeded and no reason (the app
	// exits 0 on SIGTERM); its Evicted event may be dropped by the kubelet's
	// event budget. A restartPolicy Always pod never ends on its own: the
	// model makes it evicted whatever the status and events say.
	end := e.waitPod(t, ns, pod.Name, "evicted", 4*time.Minute, func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			return errors.New("not evicted yet")
		}
		return nil
	})
	want := "without a reason" // what the model says when nothing else does
	statusSaid := end.Status.Reason == "Evicted" && end.Status.Message != ""
	if statusSaid {
		want = end.Status.Message
	} else if evs, err := e.cs.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + string(pod.UID) + ",reason=Evicted"}); err != nil {
		t.Fatalf("events: %v", err)
	} else if len(evs.Items) > 0 {
		want = evs.Items[0].Message
	}
	t.Logf("scenario 37: the API's pod: phase %s, reason %q, message %q; the termination must say %q",
		end.Status.Phase, end.Status.Reason, end.Status.Message, want)
	tr := e.trace(t, string(pod.UID), 2*time.Minute, func(tr *backends.Trace) error {
		var p pick
		p.tr = tr
		r := p.one(names.SpanContainerRun, ctrName("app"))
		term := p.one(names.SpanPodTermination)
		if p.err != nil {
			return p.err
		}
		w := want
		if !statusSaid && !hasSpanEvent(tr, names.K8sEventName("Evicted")) {
			// The Evicted event is in the API but never reached the trace
			// (second run: phase Succeeded, no reason, the event absent
			// from the trace): the model says the kubelet gave no reason.
			w = "without a reason"
		}
		if term.Error || !strings.Contains(term.Str(names.Message), w) {
			return fmt.Errorf("termination: error %v, tags %v, want message %q", term.Error, term.Tags, w)
		}
		return firstErr(attr(r, names.ExitCause, string(names.CauseEvicted)), attr(term, names.TerminationReason, "Evicted"),
			attr(term, names.GracePeriodOverrun, "false"))
	})
	if !statusSaid && want != "without a reason" && !hasSpanEvent(tr, names.K8sEventName("Evicted")) {
		t.Logf("scenario 37: the kubelet's Evicted event (%q) is in the API but not on the trace", want)
	}
	report(t, tr)
	if r, err := only(tr, names.SpanContainerRun, ctrName("app")); err == nil {
		t.Logf("scenario 37: run cause %s, message %q", r.Str(names.ExitCause), r.Str(names.Message))
	}
	if term, err := only(tr, names.SpanPodTermination); err == nil {
		t.Logf("scenario 37: pod.termination reason %s, message %q, overrun %s",
			term.Str(names.TerminationReason), term.Str(names.Message), term.Str(names.GracePeriodOverrun))
	}
	e.deletePod(t, ns, pod.Name)
}

// resizeRestart: an in-place resize of a memory limit whose resizePolicy
// is RestartContainer: the kubelet restarts the container (Killing
// "Container app resize requires restart"), the pod is not terminating.
func (e *env) resizeRestart(t *testing.T) {
	t.Parallel()
	const ns = "s38-resize-restart"
	pod := e.resizedPod(t, ns, corev1.ResourceMemory, "32Mi", "64Mi", corev1.RestartContainer, "96Mi")
	e.waitPod(t, ns, pod.Name, "restarted by the resize", 2*time.Minute, restarted(1))
	e.wantKubeletRestart(t, ns, pod, names.KubeletRestartResize)
}

// resizedPod: a Ready pod in its own namespace ns whose app container has
// a request and a limit of res and that resource's resizePolicy, its limit
// then resized in place (the resize subresource) to newLimit.
func (e *env) resizedPod(t *testing.T, ns string, res corev1.ResourceName, request, limit string,
	policy corev1.ResourceResizeRestartPolicy, newLimit string) *corev1.Pod {
	t.Helper()
	e.namespace(t, ns)
	app := container("app", sh(gracefulApp)...)
	app.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{res: resource.MustParse(request)},
		Limits:   corev1.ResourceList{res: resource.MustParse(limit)},
	}
	app.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: res, RestartPolicy: policy}}
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resized"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	patch := []byte(fmt.Sprintf(`{"spec":{"containers":[{"name":"app","resources":{"limits":{%q:%q}}}]}}`, res, newLimit))
	if _, err := e.cs.CoreV1().Pods(ns).Patch(e.ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("resize: %v", err)
	}
	return pod
}

// hasSpanEvent: some span of the trace has an event with that name.
func hasSpanEvent(tr *backends.Trace, name string) bool {
	for _, sp := range tr.Spans {
		for _, ev := range sp.Events {
			if ev.Name == name {
				return true
			}
		}
	}
	return false
}

// wantKubeletRestart: the pod's first run of "app" is an ERROR the kubelet
// decided (cause kubelet_restart) for the reason given; the pod is deleted.
func (e *env) wantKubeletRestart(t *testing.T, ns string, pod *corev1.Pod, reason string) {
	t.Helper()
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		r, err := firstRun(tr, "app")
		if err != nil {
			return err
		}
		if !r.Error {
			return fmt.Errorf("run not an error: %v", r.Tags)
		}
		return firstErr(attr(r, names.ExitCause, string(names.CauseKubeletRestart)), attr(r, names.KubeletRestartReason, reason))
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}
