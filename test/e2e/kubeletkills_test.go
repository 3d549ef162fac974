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
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		r, err := firstRun(tr, "app")
		if err != nil {
			return err
		}
		if !r.Error {
			return fmt.Errorf("run not an error: %v", r.Tags)
		}
		return firstErr(attr(r, names.ExitCause, string(names.CauseKubeletRestart)),
			attr(r, names.KubeletRestartReason, names.KubeletRestartPostStart))
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}

// networkProbeRestarts: liveness probes the kubelet runs over the network
// (httpGet and tcpSocket to port 1, where nothing listens; 8089 answered
// HTTP 404 and accepted TCP in this cluster): the kernel
// sees no probe, the restart is still a liveness restart.
func (e *env) networkProbeRestarts(t *testing.T) {
	t.Parallel()
	const ns = "s36-network-probes"
	e.namespace(t, ns)
	for _, tc := range []struct {
		name  string
		probe corev1.ProbeHandler
	}{
		{"http", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(1)}}},
		{"tcp", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(1)}}},
	} {
		app := container("app", sh(gracefulApp)...)
		app.LivenessProbe = &corev1.Probe{ProbeHandler: tc.probe, InitialDelaySeconds: 2, PeriodSeconds: 1, FailureThreshold: 2}
		pod := e.createPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
		e.waitPod(t, ns, pod.Name, "restarted by its "+tc.name+" liveness probe", 2*time.Minute, restarted(1))
		tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
			r, err := firstRun(tr, "app")
			if err != nil {
				return err
			}
			if msg := r.Str(names.Message); !strings.Contains(strings.ToLower(msg), "liveness") {
				return fmt.Errorf("run names no liveness probe: %q", msg)
			}
			return attr(r, names.ExitCause, string(names.CauseLivenessRestart))
		})
		report(t, tr)
		e.deletePod(t, ns, pod.Name)
	}
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
	// exits 0 on SIGTERM); its Evicted event says what happened.
	e.waitPod(t, ns, pod.Name, "evicted", 4*time.Minute, func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			return errors.New("not evicted yet")
		}
		return nil
	})
	tr := e.trace(t, string(pod.UID), 2*time.Minute, func(tr *backends.Trace) error {
		var p pick
		p.tr = tr
		r := p.one(names.SpanContainerRun, ctrName("app"))
		term := p.one(names.SpanPodTermination)
		if p.err != nil {
			return p.err
		}
		if term.Error || !strings.Contains(term.Str(names.Message), "EmptyDir") {
			return fmt.Errorf("termination: error %v, tags %v", term.Error, term.Tags)
		}
		return firstErr(attr(r, names.ExitCause, string(names.CauseEvicted)), attr(term, names.TerminationReason, "Evicted"),
			attr(term, names.GracePeriodOverrun, "false"))
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}

// resizeRestart: an in-place resize of a memory limit whose resizePolicy
// is RestartContainer: the kubelet restarts the container (Killing
// "Container app resize requires restart"), the pod is not terminating.
func (e *env) resizeRestart(t *testing.T) {
	t.Parallel()
	const ns = "s38-resize-restart"
	e.namespace(t, ns)
	app := container("app", sh(gracefulApp)...)
	app.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
	}
	app.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "resized"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{app}}})
	patch := []byte(`{"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"96Mi"}}}]}}`)
	if _, err := e.cs.CoreV1().Pods(ns).Patch(e.ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatalf("resize: %v", err)
	}
	e.waitPod(t, ns, pod.Name, "restarted by the resize", 2*time.Minute, restarted(1))
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		r, err := firstRun(tr, "app")
		if err != nil {
			return err
		}
		if !r.Error {
			return fmt.Errorf("run not an error: %v", r.Tags)
		}
		return firstErr(attr(r, names.ExitCause, string(names.CauseKubeletRestart)),
			attr(r, names.KubeletRestartReason, names.KubeletRestartResize))
	})
	report(t, tr)
	e.deletePod(t, ns, pod.Name)
}
