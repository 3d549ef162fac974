package correlate

import (
	"syscall"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// Disruptions: why a pod was made to go, when something other than its
// owner's plain deletion ended it. The API server, the scheduler, the taint
// manager, the pod garbage collector and the kubelet set the pod's
// DisruptionTarget condition before they delete or kill it; its reason goes
// on the termination and into the cause of the runs it ended.

// disruptionCauses maps a DisruptionTarget reason to a run's cause.
var disruptionCauses = map[string]names.Cause{
	"EvictionByEvictionAPI":  names.CauseEvicted, // kubectl drain, the Eviction API
	"TerminationByKubelet":   names.CauseEvicted, // node-pressure eviction, graceful node shutdown
	"DeletionByTaintManager": names.CauseEvicted, // NoExecute taint
	"PreemptionByScheduler":  names.CausePreempted,
	"DeletionByPodGC":        names.CauseDeletedByPodGC, // orphaned or terminating on a lost node
}

// causeDisrupted is the cause of a DisruptionTarget reason not in
// disruptionCauses.
const causeDisrupted = names.CauseDisrupted

// isDisruptionCause tells a cause a disruption gives.
func isDisruptionCause(cause names.Cause) bool {
	if cause == causeDisrupted {
		return true
	}
	for _, c := range disruptionCauses {
		if c == cause {
			return true
		}
	}
	return false
}

// disruption returns the pod's DisruptionTarget reason and message, if set.
func (p *pod) disruption() (reason, message string, ok bool) {
	if p.info == nil {
		return "", "", false
	}
	for _, cd := range p.info.Conditions {
		if cd.Type == "DisruptionTarget" && cd.Status == "True" {
			return cd.Reason, cd.Message, true
		}
	}
	return "", "", false
}

// disruptionCause names a run's end by the pod's disruption, when the run
// ended during the pod's termination.
func (ct *container) disruptionCause() (names.Cause, []span.Attr) {
	p := ct.pod
	if p == nil || p.terminating.IsZero() || ct.exitAt.Before(p.terminating) {
		return "", nil
	}
	reason, msg, ok := p.disruption()
	if !ok {
		return "", nil
	}
	cause := disruptionCauses[reason]
	if cause == "" {
		cause = causeDisrupted
	}
	attrs := []span.Attr{span.String(names.DisruptionReason, reason)}
	if msg != "" {
		attrs = append(attrs, span.String(names.Message, msg))
	}
	if stop := ct.stopSignal(); stop != nil {
		attrs = append(attrs, span.String(names.SignalSenderKind, string(stop.senderKind)),
			span.String(names.SignalSenderComm, stop.senderComm), span.Int(names.SignalSenderPID, int64(stop.senderPID)))
	}
	return cause, attrs
}

// disruptionGraceful tells a disrupted run that ended in its own time (not
// killed with SIGKILL, no error exit): not an error of the container.
func (ct *container) disruptionGraceful() bool {
	if ct.exitSignal == syscall.SIGKILL {
		return false
	}
	if ct.exitSignal != 0 {
		return true
	}
	if ct.exitCode == 0 {
		return true
	}
	stop := ct.stopSignal()
	return stop != nil && gracefulExit(ct.exitCode, stop.sig)
}

// goingReason tells a pod the API says is going away without a deletion:
// a terminal phase with a reason (DeadlineExceeded, Evicted, Shutdown, ...),
// a DisruptionTarget condition, the kubelet's Evicted event, or a terminal
// phase its restart policy never gives on its own (kubeletEnded).
func (p *pod) goingReason() (string, bool) {
	if p.info == nil {
		return "", false
	}
	if reason, _, ok := p.disruption(); ok {
		return reason, true
	}
	if p.info.Reason != "" && (p.info.Phase == "Failed" || p.info.Phase == "Succeeded" || p.info.Phase == "") {
		return p.info.Reason, true
	}
	if p.kubeletEviction() != nil || p.kubeletEnded() {
		return "Evicted", true
	}
	return "", false
}
