package watcher

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/podchron/podchron/internal/fact"
)

// convertEphemeralAndGates fills in the pod's ephemeral (kubectl debug)
// containers, their statuses, its readiness gates and its image volumes.
func convertEphemeralAndGates(pod *corev1.Pod, info *fact.PodInfo) {
	for i := range pod.Spec.EphemeralContainers {
		info.EphemeralContainers = append(info.EphemeralContainers, pod.Spec.EphemeralContainers[i].Name)
	}
	info.EphemeralStatuses = convertStatuses(pod.Status.EphemeralContainerStatuses)
	for _, g := range pod.Spec.ReadinessGates {
		info.ReadinessGates = append(info.ReadinessGates, string(g.ConditionType))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			info.ImageVolumes = append(info.ImageVolumes, fact.ImageVolume{Name: v.Name, Reference: v.Image.Reference,
				PullPolicy: string(v.Image.PullPolicy)})
		}
	}
}
