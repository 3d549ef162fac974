// In-place resize (GA in Kubernetes 1.35): the kubelet resizes a running
// pod's containers as its spec asks, and says so in two pod conditions:
// PodResizePending (the resize cannot be done now: Deferred, or ever:
// Infeasible) and PodResizeInProgress (resources allocated, being
// actuated). A resize whose resizePolicy is RestartContainer restarts the
// container: that run ends as kubelet_restart (resize) (kubelet_kill.go).
// Each is an event on the pod's root span: pending (with the kubelet's
// reason and message), in progress, and done (with how long it took).

package correlate

import (
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// podResize: the pod's resize in progress and the pending one told.
type podResize struct {
	resizeSince   time.Time // PodResizeInProgress True since (zero: none)
	resizePending time.Time // the PodResizePending transition told
}

// resizeChanged follows the pod's resize conditions.
func (c *Correlator) resizeChanged(p *pod) {
	if p.info == nil || !p.startupDone {
		return
	}
	inProgress := false
	for _, cd := range p.info.Conditions {
		switch {
		case cd.Type == "PodResizeInProgress" && cd.Status == "True":
			inProgress = true
			if p.resizeSince.IsZero() {
				p.resizeSince = cd.LastTransitionTime
				if p.resizeSince.IsZero() {
					p.resizeSince = c.now
				}
				p.addRootEvent(span.SpanEvent{Name: names.EventResizeInProgress, Time: p.resizeSince,
					Attrs: conditionAttrs(cd.Reason, cd.Message)})
			}
		case cd.Type == "PodResizePending" && cd.Status == "True" && !cd.LastTransitionTime.Equal(p.resizePending):
			p.resizePending = cd.LastTransitionTime
			at := cd.LastTransitionTime
			if at.IsZero() {
				at = c.now
			}
			p.addRootEvent(span.SpanEvent{Name: names.EventResizePending, Time: at, Attrs: conditionAttrs(cd.Reason, cd.Message)})
		}
	}
	if !inProgress && !p.resizeSince.IsZero() {
		// The kubelet removes the condition once the resize is actuated.
		p.addRootEvent(span.SpanEvent{Name: names.EventResizeDone, Time: c.now,
			Attrs: []span.Attr{span.Float(names.ResizeSeconds, c.now.Sub(p.resizeSince).Seconds())}})
		p.resizeSince = time.Time{}
	}
}

// conditionAttrs are a condition's reason and message, as event attributes.
func conditionAttrs(reason, message string) []span.Attr {
	var a []span.Attr
	if reason != "" {
		a = append(a, span.String(names.K8sEventReason, reason))
	}
	if message != "" {
		a = append(a, span.String(names.Message, message))
	}
	return a
}
