package watcher

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// appPod is a pod as the API server sends a Deployment's: two containers
// with env, mounts, probes and resources, volumes, tolerations and
// affinity, managedFields from three managers, a last-applied annotation
// and a running status.
func appPod(i int) *corev1.Pod {
	var env []corev1.EnvVar
	for k := range 15 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("APP_SETTING_%d", k), Value: fmt.Sprintf("value-of-setting-%d-for-the-app", k)})
	}
	res := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
	probe := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
		PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3}
	var mounts []corev1.VolumeMount
	var vols []corev1.Volume
	for k := range 5 {
		name := fmt.Sprintf("config-volume-%d", k)
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: "/etc/app/" + name, ReadOnly: true})
		vols = append(vols, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config-" + name}}}})
	}
	ctr := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "registry.example.com/team/" + name + ":v1.42.7",
			Command: []string{"/app/" + name}, Args: []string{"--config=/etc/app/config.yaml", "--log-level=info", "--port=8080"},
			Env: env, Resources: res, VolumeMounts: mounts, LivenessProbe: probe, ReadinessProbe: probe,
			Ports:                  []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			TerminationMessagePath: "/dev/termination-log", ImagePullPolicy: corev1.PullIfNotPresent}
	}
	status := func(name string) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, Ready: true, RestartCount: 0, Image: "registry.example.com/team/" + name + ":v1.42.7",
			ImageID:     "registry.example.com/team/" + name + "@sha256:" + strings.Repeat("ab", 32),
			ContainerID: "containerd://" + strings.Repeat("cd", 32),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}}
	}
	var mf []metav1.ManagedFieldsEntry
	for _, m := range []string{"kube-controller-manager", "kubelet", "kube-scheduler"} {
		mf = append(mf, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{` + strings.Repeat(`"f:x":{},`, 150) + `"f:y":{}}}`)}})
	}
	ctrl := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("app-7d9f8c6b5-%05d", i), Namespace: "shop", UID: types.UID(fmt.Sprintf("uid-%d", i)),
			Labels:          map[string]string{"app": "app", "pod-template-hash": "7d9f8c6b5", "team": "shop", "version": "v1.42.7"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("x", 3000), "prometheus.io/scrape": "true"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "app-7d9f8c6b5", UID: "rs-uid", Controller: &ctrl}},
			ManagedFields:   mf},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{ctr("app"), ctr("sidecar")}, Volumes: vols,
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname",
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "app"}}}}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, PodIP: "10.244.1.17", HostIP: "10.0.0.5",
			PodIPs:            []corev1.PodIP{{IP: "10.244.1.17"}},
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{status("app"), status("sidecar")}},
	}
}

// BenchmarkPodCacheMemory: the heap a node's 110 pods hold in the pod
// informer's cache, with the whole spec and status (managedFields and
// unread annotations dropped: the transform until November 2026) and as the
// transform leaves them now (bytes per pod, reported).
func BenchmarkPodCacheMemory(b *testing.B) {
	const pods = 110
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		base := heap()
		cache := make([]*corev1.Pod, pods)
		for i := range cache {
			cache[i] = appPod(i).DeepCopy() // as decoded: no memory shared with the template
			cache[i].ManagedFields, cache[i].Annotations = nil, nil
		}
		whole := heap() - base
		for i := range cache {
			cache[i] = appPod(i).DeepCopy()
			if _, err := stripObject(cache[i]); err != nil {
				b.Fatal(err)
			}
		}
		// The dropped fields are garbage now, but they shared the pods'
		// allocations: copy the kept pods as a decoder would make them.
		for i := range cache {
			cache[i] = cache[i].DeepCopy()
		}
		cached := heap() - base
		runtime.KeepAlive(cache)
		b.ReportMetric(float64(whole)/pods, "B/pod-whole")
		b.ReportMetric(float64(cached)/pods, "B/pod-cached")
	}
}
