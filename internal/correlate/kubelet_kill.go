// The kubelet's own decisions: a container it stopped while its pod was not
// terminating (a restart after a failed probe or postStart hook, a resize, a
// changed definition or sandbox), and the minimum grace it gives.

package correlate

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// kubeletVerdictWait bounds how long, past its settle time, a container the
// runtime stopped with no termination of its pod in progress waits for the
// fact that says what the stop was: the next attempt (a kubelet restart; the
// first comes at once), or the pod's status (a kubelet eviction or deadline
// writes Failed and its reason once the containers have stopped, at the
// status manager's next sync). Later restarts wait out the kubelet's back-off
// (10 s to 5 min): the run is decided without them. The status comes when
// the kubelet's pod worker has finished the kill and its status manager
// synced: on Kubernetes 1.35 and 1.37 under load (e2e 37 on 2 cores at load
// ~40, 2026-11-25) that was later than the 1.5 s settle the wait used to be,
// and an emptyDir eviction's run read completed. Only runs the kubelet
// stopped with no termination wait this long.
const kubeletVerdictWait = 10 * time.Second

// kubeletStop is the runtime's (or the kubelet's) first signal to ct's init
// when no termination of its pod was in progress then: the kubelet stopped
// this container on its own. Nil otherwise (no such signal, no API view of
// the pod, or the pod was going: a deletion, or a status that says so, whose
// termination starts at this very stop).
func (ct *container) kubeletStop() *signalRec {
	p := ct.pod
	if p == nil || p.info == nil || ct.sandbox {
		return nil
	}
	for i := range ct.signals {
		s := &ct.signals[i]
		if !s.toInit || s.sig == syscall.SIGCHLD || (s.senderKind != names.SenderRuntime && s.senderKind != names.SenderKubelet) {
			continue
		}
		if ct.exited && s.at.After(ct.exitAt) {
			return nil
		}
		if !p.terminating.IsZero() && !s.at.Before(p.terminating) {
			return nil
		}
		return s
	}
	return nil
}

// nextAttempt is the container's next run in the pod (the kubelet's new
// attempt after ct), nil if none was seen.
func (ct *container) nextAttempt() *container {
	p := ct.pod
	if p == nil || ct.name == "" {
		return nil
	}
	for _, o := range p.containers {
		if o == ct || o.sandbox || o.name != ct.name {
			continue
		}
		if o.attempt > ct.attempt || ct.exited && !o.startedAtOr().IsZero() && o.startedAtOr().After(ct.exitAt) {
			return o
		}
	}
	return nil
}

// verdictPending: ct was stopped by the kubelet with no termination in
// progress, and no fact yet says whether it was a restart (a new attempt,
// or a fact naming the reason) or the start of the pod's end (a kubelet
// eviction whose status comes later). Its spans wait, at most
// kubeletVerdictWait after its settle time.
//
// A restart (the next attempt seen) whose reason no fact has named yet
// waits kubeletEventWait for the kubelet's words while the API server is
// reachable: the pod was quiet, so its event window opens only at this stop
// (watcher.Want, the kubelet's Killing event already written), and its
// list can come after the settle time on a loaded node.
func (c *Correlator) verdictPending(ct *container) bool {
	stop := ct.kubeletStop()
	if stop == nil {
		return false
	}
	wait := kubeletVerdictWait
	if ct.nextAttempt() != nil {
		if !c.apiUp {
			return false
		}
		wait = kubeletEventWait
	}
	p := ct.pod
	if _, going := p.goingReason(); going || p.info.Reason != "" || p.info.DeletionTimestamp != nil || p.info.Deleted {
		return false
	}
	if cause, _ := c.livenessCause(ct); cause != "" {
		return false
	}
	if r := c.kubeletReason(ct, stop); r.fromFact {
		return false
	}
	return c.now.Before(ct.settleBy.Add(wait))
}

// kubeletEventWait bounds how long, past its settle time, a run the kubelet
// restarted waits for the event that names why (see verdictPending); a
// kubelet whose recorder dropped it (its budget: 25 events a pod, then one
// per 5 minutes) costs the run this much latency, and the spec names the
// reason then (specReason).
const kubeletEventWait = 5 * time.Second

// kubeletRestart is why the kubelet stopped a container, as far as the facts
// tell.
type kubeletRestart struct {
	cause    names.Cause
	reason   string // podchron.kubelet_restart.reason, for CauseKubeletRestart
	message  string
	ev       *fact.K8sEvent // the event that named it, if one did
	fromFact bool           // an event or the kernel named it (not the spec's guess)
}

// kubeletCause names the end of a container the kubelet stopped with no
// termination of its pod in progress. The structural fact decides that the
// kubelet killed it (its stop, no termination, then a new attempt or no
// termination after all); events, the kernel's view of hooks and the pod's
// spec only name the reason.
func (c *Correlator) kubeletCause(ct *container) (names.Cause, []span.Attr) {
	stop := ct.kubeletStop()
	if stop == nil {
		return "", nil
	}
	next := ct.nextAttempt()
	if _, going := ct.pod.goingReason(); (going || ct.pod.info.Reason == "Evicted") && next == nil {
		return "", nil
	}
	r := c.kubeletReason(ct, stop)
	if !r.fromFact && r.reason == names.KubeletRestartUnknown && next == nil {
		// No new attempt and nothing named a reason: the stop alone does
		// not say the kubelet restarted it.
		return "", nil
	}
	attrs := []span.Attr{span.String(names.SignalSenderKind, string(stop.senderKind)),
		span.String(names.SignalSenderComm, stop.senderComm), span.Int(names.SignalSenderPID, int64(stop.senderPID))}
	if r.cause == names.CauseKubeletRestart {
		attrs = append(attrs, span.String(names.KubeletRestartReason, r.reason))
	}
	if r.message != "" {
		attrs = append(attrs, span.String(names.Message, r.message))
	}
	if r.ev != nil {
		attrs = append(attrs, eventCut(r.ev)...)
	}
	return r.cause, attrs
}

// kubeletReason finds what named the kubelet's stop of ct: its Killing
// event, a FailedPostStartHook event or the hook's failed exec, the last
// Unhealthy event of a liveness or startup probe, a new sandbox; else the
// probes of the pod's spec the kernel cannot see (httpGet, tcpSocket, grpc).
func (c *Correlator) kubeletReason(ct *container, stop *signalRec) kubeletRestart {
	p := ct.pod
	from, to := ct.startedAtOr(), latest(ct.exitAt, stop.at)
	if ev := p.recentEvent("Killing", ct.name, from, to); ev != nil {
		if r, ok := killingReason(ev); ok {
			return r
		}
	}
	if ev := p.recentEvent("FailedPostStartHook", ct.name, from, to); ev != nil {
		return kubeletRestart{cause: names.CauseKubeletRestart, reason: names.KubeletRestartPostStart, message: ev.Message, ev: ev, fromFact: true}
	}
	if !ct.postStartFailed.IsZero() && !ct.postStartFailed.After(stop.at) {
		return kubeletRestart{cause: names.CauseKubeletRestart, reason: names.KubeletRestartPostStart, fromFact: true,
			message: fmt.Sprintf("its postStart hook exited %d", ct.postStartExit)}
	}
	if ev := p.lastProbeFailure(ct.name, from, to); ev != nil {
		cause := names.CauseLivenessRestart
		if strings.HasPrefix(ev.Message, "Startup probe") {
			cause = names.CauseStartupProbeRestart
		}
		return kubeletRestart{cause: cause, message: ev.Message, ev: ev, fromFact: true}
	}
	if r, ok := p.restartAllReason(stop); ok {
		return r
	}
	if p.recentEvent("SandboxChanged", "", from, to) != nil || p.sandboxRecreatedAfter(stop.at) {
		return kubeletRestart{cause: names.CauseKubeletRestart, reason: names.KubeletRestartSandbox, fromFact: true,
			message: "the pod's sandbox changed: the kubelet killed its containers and recreated it"}
	}
	return specReason(p, ct)
}

// killingReason reads the kubelet's Killing event: its message says why
// ("Container app failed liveness probe, will be restarted", "Container
// definition changed", "FailedPostStartHook", a resize that restarts).
// A plain "Stopping container app" names no reason.
func killingReason(ev *fact.K8sEvent) (kubeletRestart, bool) {
	r := kubeletRestart{cause: names.CauseKubeletRestart, message: ev.Message, ev: ev, fromFact: true}
	low := strings.ToLower(ev.Message)
	switch {
	case strings.Contains(low, "startup probe"):
		r.cause = names.CauseStartupProbeRestart
	case strings.Contains(low, "liveness"):
		r.cause = names.CauseLivenessRestart
	case strings.Contains(low, "poststart"):
		r.reason = names.KubeletRestartPostStart
	case strings.Contains(low, "definition changed"):
		r.reason = names.KubeletRestartDefinition
	case strings.Contains(low, "resize"):
		r.reason = names.KubeletRestartResize
	case strings.Contains(low, "sandbox"):
		r.reason = names.KubeletRestartSandbox
	default:
		return kubeletRestart{}, false
	}
	return r, true
}

// specReason guesses from the pod's spec when no fact named the reason: a
// liveness (or, before the container started, a startup) probe the kubelet
// runs over the network, which the kernel cannot see and whose events the
// kubelet's recorder may have dropped (25 per pod, then one per 5 minutes).
func specReason(p *pod, ct *container) kubeletRestart {
	spec, _ := p.spec(ct.name)
	network := func(pr *fact.ProbeSpec) bool { return pr != nil && pr.Kind != "" && pr.Kind != "exec" }
	switch {
	case spec != nil && network(spec.Startup) && !p.containerStarted(ct.name):
		return kubeletRestart{cause: names.CauseStartupProbeRestart,
			message: "stopped by the kubelet with no termination of the pod; its " + spec.Startup.Kind + " startup probe (unseen by the kernel, no event named it) is the only restart it has"}
	case spec != nil && network(spec.Liveness):
		return kubeletRestart{cause: names.CauseLivenessRestart,
			message: "stopped by the kubelet with no termination of the pod; its " + spec.Liveness.Kind + " liveness probe (unseen by the kernel, no event named it) is the only restart it has"}
	}
	return kubeletRestart{cause: names.CauseKubeletRestart, reason: names.KubeletRestartUnknown,
		message: "stopped by the kubelet with no termination of the pod; no fact named why"}
}

// lastProbeFailure is the last Unhealthy event of a liveness or startup
// probe for a container in [from, to].
func (p *pod) lastProbeFailure(container string, from, to time.Time) *fact.K8sEvent {
	for i := len(p.k8sEvents) - 1; i >= 0; i-- {
		ev := p.k8sEvents[i]
		if ev.Reason != "Unhealthy" || ev.Container != "" && ev.Container != container {
			continue
		}
		if !strings.HasPrefix(ev.Message, "Liveness probe") && !strings.HasPrefix(ev.Message, "Startup probe") {
			continue
		}
		if !ev.LastTime.Before(from.Add(-2*time.Second)) && !ev.LastTime.After(to.Add(2*time.Second)) {
			return ev
		}
	}
	return nil
}

// sandboxRecreatedAfter: a sandbox of the pod was created after t.
func (p *pod) sandboxRecreatedAfter(t time.Time) bool {
	for _, rs := range p.resandboxes {
		if !rs.created.Before(t) {
			return true
		}
	}
	return false
}

// kubeletMinimumGrace tells a SIGKILL that came after the kubelet's minimum
// grace, not after a grace period the app had: a kubelet eviction (grace 0),
// or a stop signal sent when (almost) none of the deletion's grace was left
// (a hook used it up). That is not the app's overrun.
func (p *pod) kubeletMinimumGrace(term, kill *signalRec) bool {
	if term == nil || kill == nil || kill.at.Sub(term.at) > minimumGrace+time.Second {
		return false
	}
	if p.deletedAt.IsZero() {
		reason := p.terminationReason
		if reason == "" && p.info != nil {
			reason = p.info.Reason
		}
		return reason == "Evicted"
	}
	if p.forced || p.grace < minimumGrace {
		return false
	}
	left := p.grace - term.at.Sub(p.terminating)
	return left < minimumGrace-500*time.Millisecond
}

// kubeletEviction is the kubelet's Evicted event for the pod (its eviction
// manager records it, with the reason, before it stops the pod), nil if
// none. A single-pod eviction sets no DisruptionTarget, and the pod's
// status may not say Evicted (Kubernetes 1.34 here: phase Succeeded, no
// reason, when the containers exited 0 on SIGTERM).
func (p *pod) kubeletEviction() *fact.K8sEvent {
	if p == nil {
		return nil
	}
	for i := len(p.k8sEvents) - 1; i >= 0; i-- {
		if ev := p.k8sEvents[i]; ev.Reason == "Evicted" && ev.Container == "" {
			return ev
		}
	}
	return nil
}

// kubeletEnded: the API says the pod reached a terminal phase its restart
// policy never gives on its own (Always: neither Succeeded nor Failed;
// OnFailure: not Failed), with no reason, no deletion and no static pod's
// manifest behind it: the kubelet ended it. Kubernetes 1.34 in e2e 37 wrote
// phase Succeeded and no reason for an emptyDir eviction whose app exited 0
// on SIGTERM, and its Evicted event may be dropped (the recorder's 25
// events per pod). An activeDeadlineSeconds end says DeadlineExceeded.
func (p *pod) kubeletEnded() bool {
	if p == nil || p.info == nil {
		return false
	}
	i := p.info
	if i.Reason != "" || i.DeletionTimestamp != nil || i.Deleted || i.Static {
		return false
	}
	switch i.RestartPolicy {
	case "Always":
		return i.Phase == "Succeeded" || i.Phase == "Failed"
	case "OnFailure":
		return i.Phase == "Failed"
	}
	return false
}

// evictionMessage says why the pod reads as evicted: the kubelet's status
// message, else its Evicted event's, else (kubeletEnded) that the kubelet
// ended it without saying why. Empty when nothing says it was evicted.
func (p *pod) evictionMessage() string {
	if p == nil || p.info == nil {
		return ""
	}
	if p.info.Reason == "Evicted" && p.info.Message != "" {
		return p.info.Message
	}
	if ev := p.kubeletEviction(); ev != nil {
		return ev.Message
	}
	if p.kubeletEnded() {
		return fmt.Sprintf("the kubelet ended the pod (phase %s under restartPolicy %s) without a reason: no status reason, no Evicted event seen",
			p.info.Phase, p.info.RestartPolicy)
	}
	return ""
}

// evictedExit is the cause of a container's exit with no signal in a pod
// the kubelet evicted: its status says Evicted, its Evicted event came (the
// message), or the kubelet ended it with no reason (kubeletEnded). Empty
// otherwise.
func (p *pod) evictedExit() (names.Cause, []span.Attr) {
	if p == nil {
		return "", nil
	}
	if p.info != nil && p.info.Reason == "Evicted" {
		return names.CauseEvicted, nil
	}
	if ev := p.kubeletEviction(); ev != nil {
		return names.CauseEvicted, append([]span.Attr{span.String(names.Message, ev.Message)}, eventCut(ev)...)
	}
	if p.kubeletEnded() {
		return names.CauseEvicted, []span.Attr{span.String(names.Message, p.evictionMessage())}
	}
	return "", nil
}
