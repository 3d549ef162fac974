package watcher

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2025, 3, 14, 9, 26, 53, 0, time.UTC)

func at(sec int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(sec) * time.Second)) }
func tm(sec int) time.Time   { return t0.Add(time.Duration(sec) * time.Second) }
func ptr[T any](v T) *T      { return &v }

// deploymentPod is a Deployment pod with an init container, a native
// sidecar, exec hooks and probes, running on containerd.
func deploymentPod() *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:              "web-7d9c8b6f5-x2x4k",
			Namespace:         "shop",
			UID:               "0b1f6a2e-1111-4c3b-9d7e-aaaaaaaaaaaa",
			CreationTimestamp: at(0),
			Labels:            map[string]string{"app": "web", "pod-template-hash": "7d9c8b6f5"},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9c8b6f5",
				UID: "rs-uid", Controller: ptr(true), BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec: corev1.PodSpec{
			NodeName:                      "node-a",
			TerminationGracePeriodSeconds: ptr[int64](45),
			InitContainers: []corev1.Container{
				{
					Name:    "migrate",
					Image:   "registry.example/web-migrate:1.2",
					Command: []string{"/migrate", "up"},
				},
				{
					Name:          "envoy",
					Image:         "envoyproxy/envoy:v1.31",
					RestartPolicy: &always,
					StartupProbe: &corev1.Probe{
						ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready"}},
						PeriodSeconds:    1,
						TimeoutSeconds:   1,
						FailureThreshold: 30,
					},
					Lifecycle: &corev1.Lifecycle{
						PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}},
					},
				},
			},
			Containers: []corev1.Container{{
				Name:  "web",
				Image: "registry.example/web:1.2",
				Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{
						corev1.ResourceMemory: resource.MustParse("256Mi"),
						corev1.ResourceCPU:    resource.MustParse("500m"),
					},
				},
				Lifecycle: &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "touch /tmp/started"}}},
					PreStop:   &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/sh", "-c", "sleep 10"}}},
				},
				ReadinessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}},
					PeriodSeconds: 5, TimeoutSeconds: 2, FailureThreshold: 3,
				},
				LivenessProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
					PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3,
				},
			}},
		},
		Status: deploymentPodStatus(),
	}
}

func deploymentPodStatus() corev1.PodStatus {
	return corev1.PodStatus{
		Phase:    corev1.PodRunning,
		QOSClass: corev1.PodQOSBurstable,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue, LastTransitionTime: at(2)},
			{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: at(9)},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: at(15)},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(15)},
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(0)},
		},
		InitContainerStatuses: []corev1.ContainerStatus{
			{
				Name:        "migrate",
				ContainerID: "containerd://aaa111",
				Ready:       true,
				Started:     ptr(false),
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
					ExitCode: 0, Reason: "Completed", StartedAt: at(3), FinishedAt: at(6), ContainerID: "containerd://aaa111",
				}},
			},
			{
				Name:        "envoy",
				ContainerID: "containerd://bbb222",
				Ready:       true,
				Started:     ptr(true),
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(7)}},
			},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name:         "web",
			ContainerID:  "containerd://ccc333",
			Ready:        true,
			Started:      ptr(true),
			RestartCount: 1,
			State:        corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(12)}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 137, Reason: "Error", StartedAt: at(9), FinishedAt: at(11), ContainerID: "containerd://ddd444",
			}},
		}},
	}
}

func deploymentPodInfo() fact.PodInfo {
	return fact.PodInfo{
		UID:                           "0b1f6a2e-1111-4c3b-9d7e-aaaaaaaaaaaa",
		Name:                          "web-7d9c8b6f5-x2x4k",
		Namespace:                     "shop",
		NodeName:                      "node-a",
		OwnerKind:                     "ReplicaSet",
		OwnerName:                     "web-7d9c8b6f5",
		OwnerUID:                      "rs-uid",
		TemplateHash:                  "7d9c8b6f5",
		QOSClass:                      "Burstable",
		CreatedAt:                     tm(0),
		TerminationGracePeriodSeconds: 45,
		Phase:                         "Running",
		Conditions: []fact.Condition{
			{Type: "PodReadyToStartContainers", Status: "True", LastTransitionTime: tm(2)},
			{Type: "Initialized", Status: "True", LastTransitionTime: tm(9)},
			{Type: "ContainersReady", Status: "True", LastTransitionTime: tm(15)},
			{Type: "Ready", Status: "True", LastTransitionTime: tm(15)},
			{Type: "PodScheduled", Status: "True", LastTransitionTime: tm(0)},
		},
		InitContainers: []fact.ContainerSpec{
			{Name: "migrate", Image: "registry.example/web-migrate:1.2"},
			{
				Name: "envoy", Image: "envoyproxy/envoy:v1.31", Sidecar: true, RestartPolicy: "Always",
				PreStop: &fact.Handler{Kind: "sleep", SleepSeconds: 5},
				Startup: &fact.ProbeSpec{Handler: fact.Handler{Kind: "httpGet"}, PeriodSeconds: 1, TimeoutSeconds: 1, FailureThreshold: 30},
			},
		},
		Containers: []fact.ContainerSpec{{
			Name: "web", Image: "registry.example/web:1.2",
			PostStart:        &fact.Handler{Kind: "exec", Exec: []string{"/bin/sh", "-c", "touch /tmp/started"}},
			PreStop:          &fact.Handler{Kind: "exec", Exec: []string{"/bin/sh", "-c", "sleep 10"}},
			Readiness:        &fact.ProbeSpec{Handler: fact.Handler{Kind: "tcpSocket"}, PeriodSeconds: 5, TimeoutSeconds: 2, FailureThreshold: 3},
			Liveness:         &fact.ProbeSpec{Handler: fact.Handler{Kind: "exec", Exec: []string{"cat", "/tmp/healthy"}}, PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3},
			MemoryLimitBytes: 256 << 20,
		}},
		InitStatuses: []fact.ContainerStatus{
			{
				Name: "migrate", ContainerID: "aaa111", Runtime: "containerd", Ready: true, Started: ptr(false),
				State: fact.ContainerState{Terminated: &fact.Terminated{
					Reason: "Completed", StartedAt: tm(3), FinishedAt: tm(6), ContainerID: "aaa111",
				}},
			},
			{
				Name: "envoy", ContainerID: "bbb222", Runtime: "containerd", Ready: true, Started: ptr(true),
				State: fact.ContainerState{Running: &fact.Running{StartedAt: tm(7)}},
			},
		},
		Statuses: []fact.ContainerStatus{{
			Name: "web", ContainerID: "ccc333", Runtime: "containerd", Ready: true, Started: ptr(true), RestartCount: 1,
			State: fact.ContainerState{Running: &fact.Running{StartedAt: tm(12)}},
			LastState: fact.ContainerState{Terminated: &fact.Terminated{
				ExitCode: 137, Reason: "Error", StartedAt: tm(9), FinishedAt: tm(11), ContainerID: "ddd444",
			}},
		}},
	}
}

// convertTests are pods and the facts Convert makes of them.
var convertTests = []struct {
	name string
	pod  func() *corev1.Pod
	want func() fact.PodInfo
}{
	{
		name: "deployment pod with init container, sidecar, hooks and probes",
		pod:  deploymentPod,
		want: deploymentPodInfo,
	},
	{
		name: "static pod (mirror) on cri-o",
		pod: func() *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: "etcd-node-a", Namespace: "kube-system", UID: "mirror-uid",
					CreationTimestamp: at(0),
					Annotations: map[string]string{
						"kubernetes.io/config.hash":   "0f1e2d",
						"kubernetes.io/config.mirror": "0f1e2d",
						"kubernetes.io/config.source": "file",
					},
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: "node-uid", Controller: ptr(true)}},
				},
				Spec: corev1.PodSpec{
					NodeName:   "node-a",
					Containers: []corev1.Container{{Name: "etcd", Image: "registry.k8s.io/etcd:3.5.15-0"}},
				},
				Status: corev1.PodStatus{
					Phase:    corev1.PodRunning,
					QOSClass: corev1.PodQOSBurstable,
					ContainerStatuses: []corev1.ContainerStatus{{
						Name: "etcd", ContainerID: "cri-o://e7c0ffee", Ready: true, Started: ptr(true),
						State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(1)}},
					}},
				},
			}
		},
		want: func() fact.PodInfo {
			return fact.PodInfo{
				UID: "mirror-uid", Name: "etcd-node-a", Namespace: "kube-system", NodeName: "node-a",
				OwnerKind: "Node", OwnerName: "node-a", QOSClass: "Burstable", Static: true, ConfigUID: "0f1e2d",
				CreatedAt: tm(0), TerminationGracePeriodSeconds: 30, Phase: "Running",
				Containers: []fact.ContainerSpec{{Name: "etcd", Image: "registry.k8s.io/etcd:3.5.15-0"}},
				Statuses: []fact.ContainerStatus{{
					Name: "etcd", ContainerID: "e7c0ffee", Runtime: "cri-o", Ready: true, Started: ptr(true),
					State: fact.ContainerState{Running: &fact.Running{StartedAt: tm(1)}},
				}},
			}
		},
	},
	{
		name: "restart rules (restartPolicyRules), in order; a rule without exit codes is not kept",
		pod: func() *corev1.Pod {
			p := deploymentPod()
			never := corev1.ContainerRestartPolicyNever
			c := &p.Spec.Containers[0]
			c.RestartPolicy = &never
			c.RestartPolicyRules = []corev1.ContainerRestartRule{
				{Action: corev1.ContainerRestartRuleActionRestart, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
					Operator: corev1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42, 43}}},
				{Action: corev1.ContainerRestartRuleActionRestartAllContainers},
				{Action: corev1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{
					Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}},
			}
			return p
		},
		want: func() fact.PodInfo {
			i := deploymentPodInfo()
			i.Containers[0].RestartPolicy = "Never"
			i.Containers[0].RestartRules = []fact.RestartRule{
				{Action: "Restart", Operator: "In", ExitCodes: []int32{42, 43}},
				{Action: "RestartAllContainers", Operator: "NotIn", ExitCodes: []int32{0}},
			}
			return i
		},
	},
	{
		name: "pod being deleted with grace period",
		pod: func() *corev1.Pod {
			p := deploymentPod()
			p.DeletionTimestamp = ptr(at(100))
			p.DeletionGracePeriodSeconds = ptr[int64](45)
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, LastTransitionTime: at(55),
				Reason: "TerminationByKubelet", Message: "pod was terminated in response to imminent node shutdown",
			})
			return p
		},
		want: func() fact.PodInfo {
			i := deploymentPodInfo()
			i.DeletionTimestamp = ptr(tm(100))
			i.DeletionGracePeriodSeconds = ptr[int64](45)
			i.Conditions = append(i.Conditions, fact.Condition{
				Type: "DisruptionTarget", Status: "True", LastTransitionTime: tm(55),
				Reason: "TerminationByKubelet", Message: "pod was terminated in response to imminent node shutdown",
			})
			return i
		},
	},
	{
		name: "evicted pod with OOMKilled and signalled containers, docker IDs",
		pod: func() *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: "batch-28492731-abcde", Namespace: "jobs", UID: "job-pod-uid", CreationTimestamp: at(0),
					OwnerReferences: []metav1.OwnerReference{
						{APIVersion: "v1", Kind: "ConfigMap", Name: "not-the-controller"},
						{APIVersion: "batch/v1", Kind: "Job", Name: "batch-28492731", Controller: ptr(true)},
					},
				},
				Spec: corev1.PodSpec{
					NodeName:                      "node-a",
					TerminationGracePeriodSeconds: ptr[int64](0),
					Containers: []corev1.Container{
						{Name: "worker", Image: "worker:7", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1G")}}},
						{Name: "logger", Image: "logger:1", LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}}},
					},
				},
				Status: corev1.PodStatus{
					Phase:    corev1.PodFailed,
					Reason:   "Evicted",
					Message:  "The node was low on resource: memory.",
					QOSClass: corev1.PodQOSBestEffort,
					ContainerStatuses: []corev1.ContainerStatus{
						{
							Name: "worker", ContainerID: "docker://deadbeef", RestartCount: 3, Started: ptr(false),
							State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
								ExitCode: 137, Reason: "OOMKilled", StartedAt: at(10), FinishedAt: at(20), ContainerID: "docker://deadbeef",
							}},
							LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
								ExitCode: 137, Reason: "OOMKilled", StartedAt: at(5), FinishedAt: at(8), ContainerID: "docker://cafe",
							}},
						},
						{
							Name: "logger", ContainerID: "docker://f00d",
							State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
								ExitCode: 143, Signal: 15, Reason: "Error", Message: "terminated", StartedAt: at(1), FinishedAt: at(21), ContainerID: "docker://f00d",
							}},
						},
					},
				},
			}
		},
		want: func() fact.PodInfo {
			return fact.PodInfo{
				UID: "job-pod-uid", Name: "batch-28492731-abcde", Namespace: "jobs", NodeName: "node-a",
				OwnerKind: "Job", OwnerName: "batch-28492731", QOSClass: "BestEffort", CreatedAt: tm(0),
				TerminationGracePeriodSeconds: 0, Phase: "Failed", Reason: "Evicted",
				Message: "The node was low on resource: memory.",
				Containers: []fact.ContainerSpec{
					{Name: "worker", Image: "worker:7", MemoryLimitBytes: 1_000_000_000},
					{Name: "logger", Image: "logger:1", Liveness: &fact.ProbeSpec{
						Handler: fact.Handler{Kind: "grpc"}, PeriodSeconds: 10, TimeoutSeconds: 1, FailureThreshold: 3,
					}},
				},
				Statuses: []fact.ContainerStatus{
					{
						Name: "worker", ContainerID: "deadbeef", Runtime: "docker", RestartCount: 3, Started: ptr(false),
						State: fact.ContainerState{Terminated: &fact.Terminated{
							ExitCode: 137, Reason: "OOMKilled", StartedAt: tm(10), FinishedAt: tm(20), ContainerID: "deadbeef",
						}},
						LastState: fact.ContainerState{Terminated: &fact.Terminated{
							ExitCode: 137, Reason: "OOMKilled", StartedAt: tm(5), FinishedAt: tm(8), ContainerID: "cafe",
						}},
					},
					{
						Name: "logger", ContainerID: "f00d", Runtime: "docker",
						State: fact.ContainerState{Terminated: &fact.Terminated{
							ExitCode: 143, Signal: 15, Reason: "Error", Message: "terminated", StartedAt: tm(1), FinishedAt: tm(21), ContainerID: "f00d",
						}},
					},
				},
			}
		},
	},
	{
		name: "pending pod: no node, waiting container, bare pod",
		pod: func() *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: "default", UID: "bare-uid", CreationTimestamp: at(0)},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
				Status: corev1.PodStatus{
					Phase: corev1.PodPending,
					ContainerStatuses: []corev1.ContainerStatus{{
						Name: "c", Image: "busybox",
						State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"busybox\""}},
					}},
				},
			}
		},
		want: func() fact.PodInfo {
			return fact.PodInfo{
				UID: "bare-uid", Name: "bare", Namespace: "default", CreatedAt: tm(0),
				TerminationGracePeriodSeconds: 30, Phase: "Pending",
				Containers: []fact.ContainerSpec{{Name: "c", Image: "busybox"}},
				Statuses: []fact.ContainerStatus{{
					Name:  "c",
					State: fact.ContainerState{Waiting: &fact.Waiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image \"busybox\""}},
				}},
			}
		},
	},
}

func TestConvert(t *testing.T) {
	for _, tt := range convertTests {
		t.Run(tt.name, func(t *testing.T) {
			pod := tt.pod()
			got := Convert(pod)
			assertEqualJSON(t, got, tt.want())
			if !reflect.DeepEqual(got, tt.want()) {
				t.Errorf("Convert: not DeepEqual (same JSON): %+v", got)
			}
			// Pure: nothing shared with the pod.
			mutatePod(pod)
			assertEqualJSON(t, got, tt.want())
		})
	}
}

// mutatePod scribbles over every slice and pointer Convert reads.
func mutatePod(p *corev1.Pod) {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			if lc := cs[i].Lifecycle; lc != nil && lc.PostStart != nil && lc.PostStart.Exec != nil {
				lc.PostStart.Exec.Command[0] = "mutated"
			}
			if pr := cs[i].LivenessProbe; pr != nil && pr.Exec != nil {
				pr.Exec.Command[0] = "mutated"
			}
		}
	}
	for _, ss := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range ss {
			if ss[i].Started != nil {
				*ss[i].Started = !*ss[i].Started
			}
		}
	}
	if p.DeletionGracePeriodSeconds != nil {
		*p.DeletionGracePeriodSeconds = 1
	}
	if len(p.Status.Conditions) > 0 {
		p.Status.Conditions[0].Reason = "mutated"
	}
}

func TestConvertLocalTimesBecomeUTC(t *testing.T) {
	p := deploymentPod()
	loc := time.FixedZone("CET", 3600)
	p.CreationTimestamp = metav1.NewTime(t0.In(loc))
	got := Convert(p)
	if got.CreatedAt != t0 {
		t.Fatalf("CreatedAt = %v (%v), want %v in UTC", got.CreatedAt, got.CreatedAt.Location(), t0)
	}
	if z := Convert(&corev1.Pod{}); !z.CreatedAt.IsZero() || z.CreatedAt != (time.Time{}) {
		t.Fatalf("zero CreatedAt = %#v", z.CreatedAt)
	}
}

func TestConvertNil(t *testing.T) {
	if got := Convert(nil); !reflect.DeepEqual(got, fact.PodInfo{}) {
		t.Fatalf("Convert(nil) = %+v", got)
	}
}

func TestSplitContainerID(t *testing.T) {
	for _, tt := range []struct{ in, runtime, id string }{
		{"containerd://0123abcd", "containerd", "0123abcd"},
		{"cri-o://f00", "cri-o", "f00"},
		{"docker://beef", "docker", "beef"},
		{"rawid", "", "rawid"},
		{"", "", ""},
	} {
		r, id := SplitContainerID(tt.in)
		if r != tt.runtime || id != tt.id {
			t.Errorf("SplitContainerID(%q) = %q, %q; want %q, %q", tt.in, r, id, tt.runtime, tt.id)
		}
	}
}

func TestContainerFromFieldPath(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"spec.containers{web}", "web"},
		{"spec.initContainers{migrate}", "migrate"},
		{"spec.ephemeralContainers{debugger-xk2p}", "debugger-xk2p"},
		{"spec.containers{web", ""},
		{"spec.containers[0]", ""},
		{"metadata.name", ""},
		{"", ""},
	} {
		if got := ContainerFromFieldPath(tt.in); got != tt.want {
			t.Errorf("ContainerFromFieldPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func podRef(container string) corev1.ObjectReference {
	ref := corev1.ObjectReference{
		Kind: "Pod", Namespace: "shop", Name: "web-7d9c8b6f5-x2x4k",
		UID: "0b1f6a2e-1111-4c3b-9d7e-aaaaaaaaaaaa", APIVersion: "v1", ResourceVersion: "4242",
	}
	if container != "" {
		ref.FieldPath = "spec.containers{" + container + "}"
	}
	return ref
}

func kubeletEvent(uid, typ, reason, msg, container string, first, last, count int) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-7d9c8b6f5-x2x4k." + uid, Namespace: "shop", UID: types.UID("ev-" + uid)},
		InvolvedObject: podRef(container),
		Type:           typ, Reason: reason, Message: msg,
		Source:         corev1.EventSource{Component: "kubelet", Host: "node-a"},
		FirstTimestamp: at(first), LastTimestamp: at(last), Count: int32(count),
	}
}

// eventPodUID is the pod of the Events in convertEventTests.
const eventPodUID = "0b1f6a2e-1111-4c3b-9d7e-aaaaaaaaaaaa"

func eventFact(uid, typ, reason, msg, source, container string, first, last, count int) fact.K8sEvent {
	return fact.K8sEvent{
		UID: "ev-" + uid, PodUID: eventPodUID, PodName: "web-7d9c8b6f5-x2x4k", Namespace: "shop",
		Type: typ, Reason: reason, Message: msg, Source: source, Container: container,
		FirstTime: tm(first), LastTime: tm(last), Count: int32(count),
	}
}

// convertEventTests are Events and the facts ConvertEvent makes of them.
var convertEventTests = []struct {
	name string
	ev   *corev1.Event
	want fact.K8sEvent
	ok   bool
}{
	{
		name: "Pulled", ok: true,
		ev:   kubeletEvent("1", "Normal", "Pulled", `Container image "web:1.2" already present on machine`, "web", 3, 3, 1),
		want: eventFact("1", "Normal", "Pulled", `Container image "web:1.2" already present on machine`, "kubelet", "web", 3, 3, 1),
	},
	{
		name: "Created", ok: true,
		ev:   kubeletEvent("2", "Normal", "Created", "Created container: web", "web", 4, 4, 1),
		want: eventFact("2", "Normal", "Created", "Created container: web", "kubelet", "web", 4, 4, 1),
	},
	{
		name: "Started init container", ok: true,
		ev: func() *corev1.Event {
			e := kubeletEvent("3", "Normal", "Started", "Started container migrate", "", 5, 5, 1)
			e.InvolvedObject.FieldPath = "spec.initContainers{migrate}"
			return e
		}(),
		want: eventFact("3", "Normal", "Started", "Started container migrate", "kubelet", "migrate", 5, 5, 1),
	},
	{
		name: "Killing", ok: true,
		ev:   kubeletEvent("4", "Normal", "Killing", "Stopping container web", "web", 100, 100, 1),
		want: eventFact("4", "Normal", "Killing", "Stopping container web", "kubelet", "web", 100, 100, 1),
	},
	{
		name: "Unhealthy liveness, repeated", ok: true,
		ev:   kubeletEvent("5", "Warning", "Unhealthy", "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory", "web", 30, 50, 3),
		want: eventFact("5", "Warning", "Unhealthy", "Liveness probe failed: cat: can't open '/tmp/healthy': No such file or directory", "kubelet", "web", 30, 50, 3),
	},
	{
		name: "BackOff", ok: true,
		ev:   kubeletEvent("6", "Warning", "BackOff", "Back-off restarting failed container web in pod web-7d9c8b6f5-x2x4k_shop(0b1f6a2e)", "web", 60, 300, 12),
		want: eventFact("6", "Warning", "BackOff", "Back-off restarting failed container web in pod web-7d9c8b6f5-x2x4k_shop(0b1f6a2e)", "kubelet", "web", 60, 300, 12),
	},
	{
		name: "Scheduled (events.k8s.io style: eventTime, reportingComponent, no count)", ok: true,
		ev: &corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "web.sched", Namespace: "shop", UID: "ev-7"},
			InvolvedObject:      podRef(""),
			Type:                "Normal",
			Reason:              "Scheduled",
			Message:             "Successfully assigned shop/web-7d9c8b6f5-x2x4k to node-a",
			EventTime:           metav1.NewMicroTime(tm(0).Add(1234 * time.Microsecond)),
			ReportingController: "default-scheduler",
			ReportingInstance:   "default-scheduler-control-plane",
			Action:              "Binding",
		},
		want: func() fact.K8sEvent {
			e := eventFact("7", "Normal", "Scheduled", "Successfully assigned shop/web-7d9c8b6f5-x2x4k to node-a", "default-scheduler", "", 0, 0, 1)
			e.FirstTime = tm(0).Add(1234 * time.Microsecond)
			e.LastTime = e.FirstTime
			return e
		}(),
	},
	{
		name: "series", ok: true,
		ev: &corev1.Event{
			ObjectMeta:          metav1.ObjectMeta{Name: "web.probe", Namespace: "shop", UID: "ev-8"},
			InvolvedObject:      podRef("web"),
			Type:                "Warning",
			Reason:              "Unhealthy",
			Message:             "Readiness probe failed: connection refused",
			EventTime:           metav1.NewMicroTime(tm(10)),
			Series:              &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(tm(70))},
			ReportingController: "kubelet",
		},
		want: eventFact("8", "Warning", "Unhealthy", "Readiness probe failed: connection refused", "kubelet", "web", 10, 70, 7),
	},
	{
		name: "Evicted", ok: true,
		ev: &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "web.evict", Namespace: "shop", UID: "ev-9"},
			InvolvedObject: podRef(""),
			Type:           "Warning",
			Reason:         "Evicted",
			Message:        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 71Mi.",
			Source:         corev1.EventSource{Component: "kubelet", Host: "node-a"},
			FirstTimestamp: at(400), LastTimestamp: at(400), Count: 1,
		},
		want: eventFact("9", "Warning", "Evicted", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 71Mi.", "kubelet", "", 400, 400, 1),
	},
	{
		name: "not a pod",
		ev: &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: "node-a.reboot", UID: "ev-10"},
			InvolvedObject: corev1.ObjectReference{Kind: "Node", Name: "node-a", UID: "node-a"},
			Reason:         "Rebooted",
		},
	},
}

func TestConvertEvent(t *testing.T) {
	for _, tt := range convertEventTests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ConvertEvent(tt.ev)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			assertEqualJSON(t, got, tt.want)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("not DeepEqual (same JSON): %+v", got)
			}
		})
	}
	if _, ok := ConvertEvent(nil); ok {
		t.Error("ConvertEvent(nil) ok")
	}
}

func assertEqualJSON(t *testing.T, got, want any) {
	t.Helper()
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	if string(g) != string(w) {
		t.Errorf("got:\n%s\nwant:\n%s", g, w)
	}
}

// The owner's UID and the pod-template-hash come along (they name the
// ReplicaSet and its Deployment); labels only when allow-listed.
func TestConvertOwnerAndLabels(t *testing.T) {
	p := deploymentPod()
	got := Convert(p, "app", "team")
	if got.OwnerUID != "rs-uid" || got.TemplateHash != "7d9c8b6f5" {
		t.Errorf("owner uid %q, template hash %q", got.OwnerUID, got.TemplateHash)
	}
	if len(got.Labels) != 1 || got.Labels["app"] != "web" {
		t.Errorf("labels %v, want only app=web (team is not set, pod-template-hash not asked for)", got.Labels)
	}
	if none := Convert(p); none.Labels != nil || none.OptOut {
		t.Errorf("labels %v without an allow-list, opt-out %v without the annotation", none.Labels, none.OptOut)
	}
	p.Annotations = map[string]string{fact.OptOutAnnotation: "false"}
	if !Convert(p).OptOut {
		t.Errorf("annotated %s=false: not opted out", fact.OptOutAnnotation)
	}
}
