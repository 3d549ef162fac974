// The pod's root span and its termination phase.

package correlate

import (
	"fmt"
	"slices"
	"time"

	"github.com/podchron/podchron/internal/measure"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// Span keys: stable names for a pod's spans (ids derive from them).
const (
	keyRoot        = span.RootKey
	keyStartup     = "startup"
	keyTermination = "termination"
)

// podTermination: the termination, from the deletion (or the first stop
// signal) to the pod's end.
type podTermination struct {
	deletedAt   time.Time // deletion requested (deletionTimestamp - grace)
	deadline    time.Time // deletionTimestamp: the grace period ends
	grace       time.Duration
	terminating time.Time // termination began (deletion, or first stop signal)
	forced      bool      // grace period 0
	stuck       bool
	overrun     bool
	// terminationReason: why a termination without an API deletion began
	// (DeadlineExceeded, Evicted, Completed, ...).
	terminationReason string
}

func (c *Correlator) rootID(p *pod) span.SpanID { return p.spanID(keyRoot) }

func (c *Correlator) startupID(p *pod) span.SpanID { return p.spanID(keyStartup) }

func (c *Correlator) terminationID(p *pod) span.SpanID { return p.spanID(keyTermination) }

// terminationParent is the parent for spans of the pod's ending.
func (c *Correlator) terminationParent(p *pod) span.SpanID {
	if p.terminating.IsZero() {
		return c.rootID(p)
	}
	return c.terminationID(p)
}

func (c *Correlator) terminationSpan(p *pod, at time.Time, unfinished string) {
	attrs := []span.Attr{span.String(names.OwnerKind, p.ownerKind())}
	if !p.deletedAt.IsZero() {
		attrs = append(attrs, span.Float(names.GracePeriodSeconds, p.grace.Seconds()))
	}
	if p.forced {
		attrs = append(attrs, span.Bool(names.TerminationForced, true))
	}
	if reason, m, ok := p.disruption(); ok {
		attrs = append(attrs, span.String(names.TerminationReason, reason))
		if m != "" {
			attrs = append(attrs, span.String(names.Message, m))
		}
	} else if p.terminationReason != "" || p.info != nil && p.info.Reason != "" {
		reason := p.terminationReason
		if reason == "" {
			reason = p.info.Reason
		}
		attrs = append(attrs, span.String(names.TerminationReason, reason))
		if p.info != nil && p.info.Reason == reason && p.info.Message != "" {
			attrs = append(attrs, span.String(names.Message, p.info.Message)) // the kubelet's, e.g. an eviction's
		} else if m := p.evictionMessage(); m != "" && reason == "Evicted" {
			attrs = append(attrs, span.String(names.Message, m)) // its Evicted event's, or why it reads as one
		}
	}
	attrs = append(attrs, span.Bool(names.GracePeriodOverrun, p.overrun))
	status, msg := span.StatusOK, ""
	if p.overrun {
		status, msg = span.StatusError, "grace period overrun: a container was killed with SIGKILL"
	} else if p.kubeletKillNote != "" {
		// A SIGKILL the kubelet decided (hooks.go): named, not an overrun.
		status, msg = span.StatusError, p.kubeletKillNote
	}
	if p.graceUsedByPreStop {
		attrs = append(attrs, span.Bool(names.GraceUsedByPreStop, true))
	}
	if p.stuck {
		attrs = append(attrs, span.Bool(names.TerminationStuck, true))
		status, msg = span.StatusError, fmt.Sprintf("stuck terminating: gone %.1fs after the deadline", at.Sub(p.deadline).Seconds())
	}
	if unfinished != "" {
		status, msg = span.StatusUnset, "still terminating: "+unfinished
	}
	// Cleanup: from the last container exit to the pod being gone.
	var lastExit time.Time
	for _, ct := range p.containers {
		if !ct.sandbox && ct.exited {
			lastExit = latest(lastExit, ct.exitAt)
		}
	}
	lastExit = latest(lastExit, p.terminating)
	if !lastExit.IsZero() && at.After(lastExit) {
		c.emit(p, span.Span{SpanID: p.spanID("cleanup"), Parent: c.terminationID(p), Name: names.SpanPodCleanup, Start: lastExit, End: at, Status: span.StatusOK,
			Attrs: []span.Attr{span.Int(names.CNIDelRuns, int64(len(p.cniDel)))}})
	}
	d := at.Sub(p.terminating)
	if unfinished == "" {
		c.observer(p).PodTermination(p.namespace(), p.ownerKind(), d, p.overrun, p.trace.String())
		if p.endpointWords() != "" {
			c.observer(p).EndpointWithdrawnLate(p.namespace())
		}
	}
	attrs = append(attrs, span.String(names.Verdict, p.endTermination(d, msg, unfinished)))
	c.emit(p, span.Span{SpanID: c.terminationID(p), Parent: c.rootID(p), Name: names.SpanPodTermination, Start: p.terminating, End: at,
		Status: status, StatusMessage: msg, Attrs: attrs, Events: append(slices.Clip(p.termEvents), p.withdrawalEvents(p.withdrawals())...)})
}

// rootSpan emits the pod's root span ("pod"), with the events kept on it.
func (c *Correlator) rootSpan(p *pod, at time.Time, unfinished string) {
	start := p.firstSeen
	if p.info != nil && !p.info.CreatedAt.IsZero() {
		start = p.info.CreatedAt
	}
	start = earliest(start, p.sandboxCreated)
	for _, ct := range p.containers {
		start = earliest(start, ct.startedAtOr())
	}
	attrs := []span.Attr{span.String(names.OwnerKind, p.ownerKind())}
	if p.info != nil {
		if p.info.OwnerName != "" {
			attrs = append(attrs, span.String(names.OwnerName, p.info.OwnerName))
		}
		if p.info.QOSClass != "" {
			attrs = append(attrs, span.String(names.QoSClass, p.info.QOSClass))
		}
		if p.info.Phase != "" {
			attrs = append(attrs, span.String(names.K8sPodStatusPhase, p.info.Phase))
		}
	}
	status, msg := span.StatusOK, ""
	if unfinished != "" {
		status, msg = span.StatusUnset, "pod still alive: "+unfinished
	}
	if p.stuck {
		attrs = append(attrs, span.Bool(names.TerminationStuck, true))
	}
	if p.rootFolded > 0 {
		attrs = append(attrs, span.Int(names.EventsFolded, int64(p.rootFolded)))
	}
	if p.signalsThrottled > 0 {
		attrs = append(attrs, span.Int(names.SignalsThrottled, int64(p.signalsThrottled)))
	}
	attrs = append(attrs, p.rootVerdictAttrs(unfinished)...)
	c.emit(p, span.Span{SpanID: c.rootID(p), Name: names.SpanPod, Start: start, End: at, Status: status, StatusMessage: msg,
		Attrs: attrs, Events: p.rootEvents})
}

// stuckSpan makes a pod stuck terminating visible while it is stuck: an
// interim span in its trace, from the end of the grace period to now, with
// what it waits for, sent at once (the termination and the root come when
// the pod is gone, maybe days later).
func (c *Correlator) stuckSpan(p *pod) {
	attrs := []span.Attr{span.Float(names.PastDeadlineSeconds, c.now.Sub(p.deadline).Seconds())}
	why := "waiting for the API object to go (a finalizer?)"
	if left := c.lingering(p); left != "" {
		attrs = append(attrs, span.String(names.LingeringContainers, left))
		why = "containers still running: " + left
	}
	c.emit(p, span.Span{SpanID: p.spanID("termination.stuck"), Parent: c.terminationID(p), Name: names.SpanPodTerminationStuck,
		Start: p.deadline, End: c.now, Status: span.StatusError, StatusMessage: "stuck terminating: " + why, Attrs: attrs})
}

// podRef names a pod for measurements that point at it.
func (c *Correlator) podRef(p *pod) measure.PodRef {
	return measure.PodRef{Name: p.name(), UID: p.uid, TraceID: p.trace.String()}
}
