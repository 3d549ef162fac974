// What the informers cache is bounded before it is stored: an Event's text
// is cut to the model's caps (a tenant can write hundreds of Events of
// 1 MiB about its own pod), and a Pod keeps only the annotations podchron
// reads.

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
	}
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
