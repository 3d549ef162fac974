package watcher

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/podchron/podchron/internal/fact"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
)

// A 1 MiB Event message (and a long reason) is cut to the model's caps
// before the Event is cached, through the list and through the watch, and
// what was cut reaches the model; a pod is cached with only the
// annotations podchron reads.
func TestLargeEventCutBeforeCached(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	pod := testPod("web-1", node)
	pod.Annotations = map[string]string{
		"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat("j", 1<<20),
		fact.OptOutAnnotation:                              "true",
	}
	listed := testEvent("web-1.big", pod, "Big"+strings.Repeat("R", 200), 1)
	listed.Message = strings.Repeat("é", 1<<19) // 1 MiB of 2-byte characters
	h := newHarness(t, fixedClock(), pod, listed)
	h.start()
	h.waitWatching("events", 1)
	watched := testEvent("web-1.big2", pod, "Unhealthy", 1)
	watched.Message = "Liveness probe failed: " + strings.Repeat("x", 1<<20)
	if _, err := h.cs.CoreV1().Events("shop").Create(context.Background(), watched, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		ev              *corev1.Event
		message, reason string
	}{
		{listed, strings.Repeat("é", fact.MaxEventMessage/2), "Big" + strings.Repeat("R", fact.MaxEventReason-3)},
		{watched, watched.Message[:fact.MaxEventMessage], "Unhealthy"},
	} {
		got := h.waitFor(tc.ev.Name, isEvent(tc.ev.UID, 1)).Event
		want := len(tc.ev.Message) + len(tc.ev.Reason) - len(tc.message) - len(tc.reason)
		if got.Message != tc.message || got.Reason != tc.reason || got.Truncated != want {
			t.Errorf("%s: message %d bytes, reason %q, %d cut; want %d, %q, %d", tc.ev.Name, len(got.Message), got.Reason, got.Truncated,
				len(tc.message), tc.reason, want)
		}
	}

	h.w.mu.Lock()
	win := h.w.windows[pod.UID]
	h.w.mu.Unlock()
	if win == nil {
		t.Fatal("no event window on the pod")
	}
	for _, obj := range win.inf.GetStore().List() {
		ev := obj.(*corev1.Event)
		if len(ev.Message) > fact.MaxEventMessage || len(ev.Reason) > fact.MaxEventReason {
			t.Errorf("%s cached with a %d-byte message, %d-byte reason", ev.Name, len(ev.Message), len(ev.Reason))
		}
	}
	cached := h.w.podInf.GetStore().List()
	if len(cached) != 1 {
		t.Fatalf("%d pods cached", len(cached))
	}
	if a := cached[0].(*corev1.Pod).Annotations; len(a) != 1 || a[fact.OptOutAnnotation] != "true" {
		t.Errorf("pod cached with annotations %d", len(a))
	}
	_ = h.stop()
}

// A pod cached as the transform leaves it converts to the same PodInfo as
// the pod the API server sent, and the watcher's own reads of it (probes it
// cannot see, quiet, Ready, mirror) agree: over random pods with every
// field filled.
func TestBoundPodKeepsWhatIsRead(t *testing.T) {
	f := randfill.NewWithSeed(1).NilChance(0.1).NumElements(1, 3).Funcs(
		func(q *resource.Quantity, c randfill.Continue) {
			*q = *resource.NewQuantity(c.Int63n(1<<34), resource.BinarySI)
		},
		func(m *map[string]string, c randfill.Continue) {
			*m = map[string]string{}
			for _, k := range []string{MirrorAnnotation, fact.OptOutAnnotation, "pod-template-hash", "app", "kubectl.kubernetes.io/last-applied-configuration"} {
				if c.Bool() {
					(*m)[k] = c.String(0)
				}
			}
		},
	)
	labels := []string{"app", "missing"}
	var before, after int
	for i := range 300 {
		var pod corev1.Pod
		f.Fill(&pod)
		switch i % 3 { // a finished or a Ready pod, now and then
		case 0:
			pod.Status.Phase = corev1.PodSucceeded
		case 1:
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
		}
		orig := pod.DeepCopy()
		if _, err := stripObject(&pod); err != nil {
			t.Fatal(err)
		}
		before += orig.Size()
		after += pod.Size()
		if got, want := Convert(&pod, labels...), Convert(orig, labels...); !reflect.DeepEqual(got, want) {
			t.Fatalf("pod %d: Convert after the transform\n%+v\nbefore:\n%+v", i, got, want)
		}
		if restartCount(&pod) != restartCount(orig) || quietKind(&pod) != quietKind(orig) || podReady(&pod) != podReady(orig) ||
			pod.Annotations[MirrorAnnotation] != orig.Annotations[MirrorAnnotation] || pod.UID != orig.UID ||
			pod.Namespace != orig.Namespace || pod.Spec.NodeName != orig.Spec.NodeName || pod.DeletionTimestamp.Equal(orig.DeletionTimestamp) != true {
			t.Fatalf("pod %d: the watcher reads the transformed pod differently", i)
		}
	}
	t.Logf("300 random pods: %d bytes as protobuf before the transform, %d after", before, after)
}
