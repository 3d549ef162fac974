// What the informers cache is bounded before it is stored: an Event's text
// is cut to the model's caps (a tenant can write hundreds of Events of
// 1 MiB about its own pod), and a Pod keeps only what podchron reads: the
// annotations it knows, its containers' names, images, probes, hooks and
// memory limits, and its status without images, resources or addresses
// (a pod's env, volumes, mounts, affinity and tolerations are most of it).

package watcher

import (
	"strconv"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
)

// truncatedAnnotation, on a cached Event, counts the bytes of its reason
// and message the cache did not keep; ConvertEvent hands the count to the
// model (fact.K8sEvent.Truncated), which says it on the span.
const truncatedAnnotation = "podchron.io/truncated-bytes"

// boundObject bounds an object the informers are about to store (the
// transform's, on an object freshly decoded and owned by the cache).
func boundObject(obj any) {
	switch o := obj.(type) {
	case *corev1.Event:
		boundEventObject(o)
	case *corev1.Pod:
		// Only the mirror and opt-out annotations are read; the others
		// (last-applied-configuration, a tenant's own) can be large.
		var kept map[string]string
		for _, k := range []string{MirrorAnnotation, fact.OptOutAnnotation} {
			if v, ok := o.Annotations[k]; ok {
				if kept == nil {
					kept = map[string]string{}
				}
				kept[k] = v
			}
		}
		o.Annotations = kept
		boundPodSpec(&o.Spec)
		boundPodStatus(&o.Status)
	}
}

// boundPodSpec keeps the fields of a pod's spec that Convert and the
// watcher read (the fields below); the rest (volumes other than image
// volumes, affinity, tolerations, security contexts, ...) is dropped.
func boundPodSpec(s *corev1.PodSpec) {
	*s = corev1.PodSpec{
		NodeName:                      s.NodeName,
		RestartPolicy:                 s.RestartPolicy,
		TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds,
		InitContainers:                boundContainers(s.InitContainers),
		Containers:                    boundContainers(s.Containers),
		EphemeralContainers:           boundEphemeral(s.EphemeralContainers),
		ReadinessGates:                s.ReadinessGates,
		Volumes:                       boundImageVolumes(s.Volumes),
	}
}

// boundImageVolumes keeps the image volumes (name and image source): their
// pulls are the pod's, not a container's.
func boundImageVolumes(vs []corev1.Volume) []corev1.Volume {
	var out []corev1.Volume
	for _, v := range vs {
		if v.Image != nil {
			out = append(out, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Image: v.Image}})
		}
	}
	return out
}

// boundContainers keeps a container's name, image, restart policy (a
// sidecar's) and rules, probes, lifecycle hooks and memory limit; its command, env,
// mounts, ports and the rest are dropped.
func boundContainers(cs []corev1.Container) []corev1.Container {
	for i := range cs {
		c := &cs[i]
		var limits corev1.ResourceList
		if mem, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			limits = corev1.ResourceList{corev1.ResourceMemory: mem}
		}
		*c = corev1.Container{
			Name:          c.Name,
			Image:         c.Image,
			RestartPolicy: c.RestartPolicy,
			// restartPolicyRules: restart_rule causes, pod.restart.
			RestartPolicyRules: c.RestartPolicyRules,
			StartupProbe:       c.StartupProbe,
			ReadinessProbe:     c.ReadinessProbe,
			LivenessProbe:      c.LivenessProbe,
			Lifecycle:          c.Lifecycle,
			Resources:          corev1.ResourceRequirements{Limits: limits},
		}
	}
	return cs
}

// boundEphemeral keeps an ephemeral container's name.
func boundEphemeral(cs []corev1.EphemeralContainer) []corev1.EphemeralContainer {
	for i := range cs {
		cs[i] = corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: cs[i].Name}}
	}
	return cs
}

// boundPodStatus keeps what Convert reads of a pod's status: its phase,
// reason, message, QoS class, conditions and its containers' statuses
// (name, id, readiness, start, restarts, states); addresses, images,
// resources and resize state are dropped.
func boundPodStatus(s *corev1.PodStatus) {
	*s = corev1.PodStatus{
		Phase:                      s.Phase,
		Reason:                     s.Reason,
		Message:                    s.Message,
		QOSClass:                   s.QOSClass,
		Conditions:                 s.Conditions,
		InitContainerStatuses:      boundStatuses(s.InitContainerStatuses),
		ContainerStatuses:          boundStatuses(s.ContainerStatuses),
		EphemeralContainerStatuses: boundStatuses(s.EphemeralContainerStatuses),
	}
}

func boundStatuses(ss []corev1.ContainerStatus) []corev1.ContainerStatus {
	for i := range ss {
		st := &ss[i]
		*st = corev1.ContainerStatus{
			Name:                 st.Name,
			ContainerID:          st.ContainerID,
			Ready:                st.Ready,
			Started:              st.Started,
			RestartCount:         st.RestartCount,
			State:                st.State,
			LastTerminationState: st.LastTerminationState,
		}
	}
	return ss
}

// boundEventObject cuts an Event's reason and message to the model's caps
// and counts the cut in truncatedAnnotation; the Event's other annotations
// are dropped (never read).
func boundEventObject(ev *corev1.Event) {
	cut := truncatedBytes(ev)
	var n int
	ev.Reason, n = fact.Truncate(ev.Reason, fact.MaxEventReason)
	cut += n
	ev.Message, n = fact.Truncate(ev.Message, fact.MaxEventMessage)
	cut += n
	ev.Annotations = nil
	if cut > 0 {
		ev.Annotations = map[string]string{truncatedAnnotation: strconv.Itoa(cut)}
	}
}

// truncatedBytes is what the cache cut from an Event's text.
func truncatedBytes(ev *corev1.Event) int {
	n, err := strconv.Atoi(ev.Annotations[truncatedAnnotation])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
