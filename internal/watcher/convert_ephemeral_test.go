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
