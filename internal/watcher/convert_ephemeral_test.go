package watcher

import (
	"testing"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
)

// A pod with a kubectl debug container and a readiness gate: the model is
// told which container names are ephemeral, their statuses, and the gate.
func TestConvertEphemeralAndReadinessGates(t *testing.T) {
	p := deploymentPod()
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb-ready"}}
	p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger-x7k2p", Image: "busybox", Command: []string{"sh"}}, TargetContainerName: "app"}}
	p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{
		Name: "debugger-x7k2p", ContainerID: "containerd://dbg0", Image: "busybox",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 130, Reason: "Error",
			StartedAt: at(70), FinishedAt: at(90), ContainerID: "containerd://dbg0"}},
	}}
	want := deploymentPodInfo()
	want.EphemeralContainers = []string{"debugger-x7k2p"}
	want.EphemeralStatuses = []fact.ContainerStatus{{
		Name: "debugger-x7k2p", ContainerID: "dbg0", Runtime: "containerd",
		State: fact.ContainerState{Terminated: &fact.Terminated{ExitCode: 130, Reason: "Error",
			StartedAt: tm(70), FinishedAt: tm(90), ContainerID: "dbg0"}},
	}}
	want.ReadinessGates = []string{"example.com/lb-ready"}
	assertEqualJSON(t, Convert(p), want)
}

// A pod with an image volume beside a ConfigMap: the model is told the
// image volume (its pulls' Events name no container), through the bounded
// cache too, and nothing of the other volume.
func TestConvertImageVolumes(t *testing.T) {
	p := deploymentPod()
	p.Spec.Volumes = []corev1.Volume{
		{Name: "settings", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
		{Name: "tools", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{
			Reference: "registry.example/tools:2", PullPolicy: corev1.PullIfNotPresent}}},
	}
	want := deploymentPodInfo()
	want.ImageVolumes = []fact.ImageVolume{{Name: "tools", Reference: "registry.example/tools:2", PullPolicy: "IfNotPresent"}}
	assertEqualJSON(t, Convert(p), want)
	boundObject(p)
	if len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].Name != "tools" {
		t.Errorf("bounded volumes %+v, want the image volume alone", p.Spec.Volumes)
	}
	assertEqualJSON(t, Convert(p), want)
}
