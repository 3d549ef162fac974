package watcher

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podchron/podchron/internal/fact"
)

// convertEphemeralAndGates fills in the pod's ephemeral (kubectl debug)
// containers, their statuses, and its readiness gates.
func convertEphemeralAndGates(pod *corev1.Pod, info *fact.PodInfo) {
	for i := range pod.Spec.EphemeralContainers {
		info.EphemeralContainers = append(info.EphemeralContainers, pod.Spec.EphemeralContainers[i].Name)
	}
	info.EphemeralStatuses = convertStatuses(pod.Status.EphemeralContainerStatuses)
	for _, g := range pod.Spec.ReadinessGates {
		info.ReadinessGates = append(info.ReadinessGates, string(g.ConditionType))
	}
}
