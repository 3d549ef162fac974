// This node's pods: the informer's updates, turned into the model's PodInfo.

package watcher

import (
	"fmt"
	"time"

	"github.com/podchron/podchron/internal/fact"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

func (w *Watcher) onPod(obj any, deleted bool) {
	w.podsReceived.Add(1)
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod == nil {
		w.log.Debug("unexpected object in pod informer", "type", fmt.Sprintf("%T", obj))
		return
	}
	// The field selector restricts the watch to this node; check again in
	// case it was not honoured (fake clients, proxies).
	if pod.Spec.NodeName != w.cfg.NodeName {
		return
	}
	info := Convert(pod, w.cfg.PodLabels...)
	info.Deleted = deleted

	now := w.clock()
	w.mu.Lock()
	s := w.pods[pod.UID]
	if s == nil {
		s = &podState{namespace: pod.Namespace, sent: map[types.UID]string{}}
		w.pods[pod.UID] = s
		if !deleted {
			w.resumeFromCreationLocked(s, pod)
		}
	}
	s.eventUID = pod.UID
	if hash := pod.Annotations[MirrorAnnotation]; hash != "" {
		s.eventUID = types.UID(hash)
	}
	s.created = pod.CreationTimestamp.Time
	if !s.caughtUp {
		// Kept current until the pod is caught up: the reconcile loop
		// reads it then, once (is its history within the Event TTL?).
		s.lastChange = LastChange(pod)
	}
	if deleted {
		if s.goneAt.IsZero() {
			s.goneAt = now
		}
		w.pruneDeletedLocked(now)
	} else {
		s.terminating = pod.DeletionTimestamp != nil
		if r := restartCount(pod); r > s.restarts {
			if s.announced {
				// A container restarted: the kubelet's words on why
				// (Killing, Unhealthy, BackOff) come with the window
				// this opens.
				s.stirredAt = now
			}
			s.restarts = r
		}
		// A quiet pod that changes how it is quiet (Ready, then Failed
		// because the kubelet evicted it; Ready, then Succeeded) is
		// stirred: the kubelet's Evicted event, written before the kill,
		// comes with the window this reopens.
		quiet := quietKind(pod)
		switch {
		case quiet == "":
			s.quietSince, s.quietKind = time.Time{}, ""
		case s.quietSince.IsZero(), s.quietKind != quiet:
			if s.quietKind != "" && s.announced {
				s.stirredAt = now
			}
			s.quietSince, s.quietKind = now, quiet
		}
	}
	w.mu.Unlock()

	if !w.send(fact.Input{Pod: &info}) {
		return
	}
	w.mu.Lock()
	s.announced = true
	w.mu.Unlock()
	w.wake()
}

// resumeFromCreationLocked lets a new pod's first event window start from
// an Events resource version seen before the pod was created:
// its Events all come after it (resume.go). Not a mirror pod's: the
// kubelet records them against the static pod, older than the mirror.
func (w *Watcher) resumeFromCreationLocked(s *podState, pod *corev1.Pod) {
	if pod.Annotations[MirrorAnnotation] != "" {
		return
	}
	if smp, ok := w.rvs.before(pod.CreationTimestamp.Add(-resumeSlack)); ok {
		s.resumeRV, s.resumeAt = smp.rv, smp.at
	}
}

// restartCount is the sum of the pod's containers' restart counts.
func restartCount(pod *corev1.Pod) int64 {
	var n int64
	for _, sts := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range sts {
			n += int64(sts[i].RestartCount)
		}
	}
	return n
}

// LastChange is the latest time the pod's object records: its creation
// and deletion, its conditions' transitions, its containers' (and init
// and ephemeral containers') starts and ends, current and last. A pod
// first seen quiet whose LastChange is older than Config.EventTTL gets no
// sweep.
func LastChange(pod *corev1.Pod) time.Time {
	var last time.Time
	see := func(t metav1.Time) {
		if t.After(last) {
			last = t.Time
		}
	}
	see(pod.CreationTimestamp)
	if pod.DeletionTimestamp != nil {
		see(*pod.DeletionTimestamp)
	}
	for i := range pod.Status.Conditions {
		see(pod.Status.Conditions[i].LastTransitionTime)
	}
	for _, sts := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses, pod.Status.EphemeralContainerStatuses} {
		for i := range sts {
			for _, st := range []corev1.ContainerState{sts[i].State, sts[i].LastTerminationState} {
				if r := st.Running; r != nil {
					see(r.StartedAt)
				}
				if t := st.Terminated; t != nil {
					see(t.StartedAt)
					see(t.FinishedAt)
				}
			}
		}
	}
	return last
}

// quietKind is how a pod is quiet: its phase once it has finished,
// "Ready" while it is Ready, "" while it is neither.
func quietKind(pod *corev1.Pod) string {
	switch {
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return string(pod.Status.Phase)
	case podReady(pod):
		return quietReady
	}
	return ""
}

// quietReady is quietKind's "Ready".
const quietReady = string(corev1.PodReady)

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (w *Watcher) pruneDeletedLocked(now time.Time) {
	for uid, s := range w.pods {
		if !s.goneAt.IsZero() && now.Sub(s.goneAt) > deletedTTL && w.windows[uid] == nil {
			delete(w.pods, uid)
		}
	}
}

// stripObject drops what podchron never reads from cached objects:
// managedFields are often the largest part of a pod.
func stripObject(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	boundObject(obj)
	return obj, nil
}
