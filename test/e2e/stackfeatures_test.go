package e2e

// Lifecycle features of Kubernetes 1.35–1.37: image volumes (containerd
// 2.1+) and lifecycle.stopSignal (the ContainerStopSignals gate, switched on
// for the 1.37 leg, stackGates) need a newer node than the 1.35 leg's
// (containerd 1.6) and skip there, saying why; an in-place resize without
// a restart runs on both legs.

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/test/e2e/backends"
)

// runtimeAtLeast: the node's container runtime (containerd://X.Y.Z, as the
// kubelet reports it) is containerd major.minor or newer.
func (e *env) runtimeAtLeast(t *testing.T, major, minor int) (bool, string) {
	t.Helper()
	nodes, err := e.cs.CoreV1().Nodes().List(e.ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v", err)
	}
	v := nodes.Items[0].Status.NodeInfo.ContainerRuntimeVersion
	rest, ok := strings.CutPrefix(v, "containerd://")
	if !ok {
		return false, v
	}
	parts := strings.SplitN(strings.TrimPrefix(rest, "v"), ".", 3)
	if len(parts) < 2 {
		return false, v
	}
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false, v
	}
	return maj > major || maj == major && mnr >= minor, v
}

// ---- 55: an image volume's pull in the start-up -----------------------------

// imageVolume: a pod mounting an OCI image as a volume (GA in 1.36). The
// kubelet makes sure of the image before the pod's first container, and
// its Events about it name no container: the trace shows a
// pod.image_volume_pull under the start-up, named by its volume, beside
// the container's own image step. The image is this cluster's busybox,
// already on the node (no registry here): the pull is the kubelet's
// "already present" check, an instant span; a real pull has the same
// Events with a duration.
func (e *env) imageVolume(t *testing.T) {
	t.Parallel()
	if ok, v := e.runtimeAtLeast(t, 2, 1); !ok {
		t.Skipf("image volumes need containerd 2.1 or newer; this node runs %s (the 1.37 leg runs containerd 2)", v)
	}
	const ns = "s55-image-volume"
	e.namespace(t, ns)
	app := container("app", sh(`ls /tools/bin/busybox >/dev/null || exit 3; `+gracefulApp)...)
	app.VolumeMounts = []corev1.VolumeMount{{Name: "tools", MountPath: "/tools"}}
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mounted"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "tools", VolumeSource: corev1.VolumeSource{
			Image: &corev1.ImageVolumeSource{Reference: image, PullPolicy: corev1.PullIfNotPresent}}}},
			Containers: []corev1.Container{app}}})
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		st := pk.one(names.SpanPodStartup)
		vol := pk.one(names.SpanPodImageVolumePull)
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		if pk.err != nil {
			return pk.err
		}
		if vol.Error || st.Error || run.Error {
			return fmt.Errorf("errors: volume pull %v start-up %v run %v", vol.Error, st.Error, run.Error)
		}
		name, _, _ := strings.Cut(image, ":")
		return firstErr(childOf(tr, vol, st), attr(vol, names.K8sVolumeName, "tools"), attr(vol, names.ContainerImageName, name),
			attr(run, names.ExitCause, "completed"))
	})
	report(t, tr)
}

// ---- 56: lifecycle.stopSignal -------------------------------------------------

// stopSignalField: a container whose pod asks for SIGUSR1 as its stop
// signal (lifecycle.stopSignal, the ContainerStopSignals gate; the pod
// names its OS, as the field requires). The app exits 0 on SIGUSR1 and
// ignores SIGTERM: the trace's container.stop is the SIGUSR1 the runtime
// sent, handled, with no SIGKILL, and the run a clean completion. Where
// scenario 26 proves the image's STOPSIGNAL, this proves the pod's.
func (e *env) stopSignalField(t *testing.T) {
	t.Parallel()
	if on, err := e.cluster.GateOn(e.ctx, "ContainerStopSignals"); err != nil {
		t.Fatal(err)
	} else if !on {
		t.Skip("the gate ContainerStopSignals (alpha through 1.37) is off in this cluster: the 1.37 leg switches it on (stackGates)")
	}
	if ok, v := e.runtimeAtLeast(t, 2, 1); !ok {
		t.Skipf("lifecycle.stopSignal needs a runtime that reads the CRI's stop signal (containerd 2.1 or newer); this node runs %s", v)
	}
	const ns = "s56-stop-signal"
	e.namespace(t, ns)
	usr1 := corev1.SIGUSR1
	app := container("app", sh(`trap 'exit 0' USR1; trap '' TERM; while :; do sleep 1 & wait $!; done`)...)
	app.Lifecycle = &corev1.Lifecycle{StopSignal: &usr1}
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "usr1"},
		Spec: corev1.PodSpec{OS: &corev1.PodOS{Name: corev1.Linux}, Containers: []corev1.Container{app}}})
	time.Sleep(2 * time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	e.wantHandledStop(t, pod, "SIGUSR1")
}

// ---- 57: an in-place resize without a restart --------------------------------

// resizeInPlace: a CPU limit resized in place (GA in 1.35) whose
// resizePolicy is NotRequired: the kubelet changes the container's cgroup
// and restarts nothing. The trace: the resize as events on the pod's root
// (in progress, done with its duration, from the PodResizeInProgress
// condition), one run of the app, ended by the deletion, not by the
// kubelet. Runs on both legs (scenario 38 is the resize that restarts).
func (e *env) resizeInPlace(t *testing.T) {
	t.Parallel()
	const ns = "s57-resize-in-place"
	pod := e.resizedPod(t, ns, corev1.ResourceCPU, "50m", "100m", corev1.NotRequired, "150m")
	e.waitPod(t, ns, pod.Name, "resized in place", 2*time.Minute, func(p *corev1.Pod) error {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount != 0 {
				return fmt.Errorf("container %s restarted %d times", cs.Name, cs.RestartCount)
			}
			if cs.Resources == nil || cs.Resources.Limits.Cpu().MilliValue() != 150 {
				return fmt.Errorf("container %s resources %v", cs.Name, cs.Resources)
			}
		}
		for _, cd := range p.Status.Conditions {
			if cd.Type == corev1.PodResizeInProgress || cd.Type == corev1.PodResizePending {
				return fmt.Errorf("condition %s %s", cd.Type, cd.Status)
			}
		}
		return nil
	})
	time.Sleep(time.Second)
	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		pk := &pick{tr: tr}
		root := pk.one(names.SpanPod)
		run := pk.one(names.SpanContainerRun, ctrName("app"))
		if pk.err != nil {
			return pk.err
		}
		var inProgress, done bool
		for _, ev := range root.Events {
			inProgress = inProgress || ev.Name == names.EventResizeInProgress
			done = done || ev.Name == names.EventResizeDone
		}
		if !inProgress || !done {
			return fmt.Errorf("root events: resize in progress %v, done %v", inProgress, done)
		}
		if run.Error {
			return fmt.Errorf("the run is an error: %v", run.Tags)
		}
		return attr(run, names.ExitCause, "completed")
	})
	report(t, tr)
}
