// Container restart rules (Kubernetes 1.34+, KEP-5307: a container's
// restartPolicyRules) and the in-place restart of a whole pod (1.35+,
// KEP-5532: the RestartAllContainers action and the pod's
// AllContainersRestarting condition).
//
// A rule matches a container's own exit by its code; the first that
// matches decides, whatever the restart policy says. Restart restarts that
// container: its run's cause is restart_rule, naming the rule. The kubelet
// answers RestartAllContainers by stopping every other container of the
// pod (no preStop hooks, no termination of the pod), then running the init
// containers again and starting the app containers, in the same sandbox:
// the trigger's run ends as restart_rule, its siblings' as kubelet_restart
// (reason restart_all_containers), and the whole restart is a pod.restart
// span under the root, from the trigger's exit until the pod is Ready again
// (or its end), with the init containers' runs under it.
//
// Identity comes from facts that hold across versions: the exit code (the
// kernel's, else the runtime's), the rule in the pod's spec, the runtime's
// stop of the siblings; the AllContainersRestarting condition, where the
// API server has it, only confirms the restart began when no exit was seen.

package correlate

import (
	"fmt"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// podRestartAll: the pod's in-place restarts (RestartAllContainers).
type podRestartAll struct {
	// restartAllAt is when the current restart began (the trigger's exit,
	// or the AllContainersRestarting condition's time); zero when none is
	// in progress.
	restartAllAt  time.Time
	restartAllWhy string // "container app exited 42: RestartAllContainers on exit code In [42]"
	restartAllKey string // the restart's span key
	// restartAllByCond: begun from the condition, its trigger not known yet.
	restartAllByCond bool
	// restartAllUsed: a span went out under it (its ID is fixed now).
	restartAllUsed bool
}

// restartRule is the rule of ct's spec its exit matched, nil when the exit
// was not the container's own (a signal, a stop by the kubelet, the pod's
// termination) or no rule matches.
func (c *Correlator) restartRule(ct *container) *fact.RestartRule {
	p := ct.pod
	if p == nil || ct.sandbox || !ct.exited || ct.exitSignal != 0 || ct.unknownExit {
		return nil
	}
	if !p.terminating.IsZero() && !ct.exitAt.Before(p.terminating) {
		return nil
	}
	if ct.kubeletStop() != nil {
		return nil // the kubelet stopped it: not its own exit
	}
	spec, _ := p.spec(ct.name)
	if spec == nil {
		return nil
	}
	return spec.RestartRuleFor(int32(ct.exitCode))
}

// restartRuleCause names a run that ended with an exit its rules answer.
func (c *Correlator) restartRuleCause(ct *container) (names.Cause, []span.Attr) {
	rule := c.restartRule(ct)
	if rule == nil {
		return "", nil
	}
	what := "the kubelet restarts it"
	if rule.Action == fact.RestartRuleRestartAll {
		what = "the kubelet restarts every container of the pod, init containers first, in the same sandbox"
	}
	return names.CauseRestartRule, []span.Attr{span.String(names.RestartRule, rule.String()),
		span.String(names.Message, fmt.Sprintf("exit code %d matched its restart rule %q: %s", ct.exitCode, rule.String(), what))}
}

// noteRestartAll begins the pod's in-place restart when ct's own exit
// matched a RestartAllContainers rule.
func (c *Correlator) noteRestartAll(ct *container) {
	p := ct.pod
	if p == nil || ct.exitAt.IsZero() {
		return
	}
	if !p.restartAllAt.IsZero() && (!p.restartAllByCond || p.restartAllUsed || ct.exitAt.Before(p.restartAllAt.Add(-restartAllTriggerWindow))) {
		return // in progress: from its trigger, or with spans under it already (or this exit is older)
	}
	rule := c.restartRule(ct)
	if rule == nil || rule.Action != fact.RestartRuleRestartAll {
		return
	}
	// A restart begun from the condition before the trigger's exit was
	// known (the runtime reports it after the API server, or the kernel's
	// was before this instance) takes the trigger's start and span ID.
	c.beginRestartAll(p, ct, ct.exitAt, fmt.Sprintf("container %s exited %d: %s", ct.name, ct.exitCode, rule.String()))
}

// restartAllCondition begins the restart from the API's
// AllContainersRestarting condition when no trigger's exit was seen (lost,
// or before the tracer): the condition True, or False while a container
// still waits with the reason RestartingAllContainers (1.37: the condition
// goes False once every container is removed, before they start again; a
// tracer that resumes then would otherwise read the waits as back-offs).
func (c *Correlator) restartAllCondition(p *pod) {
	if p.info == nil || !p.restartAllAt.IsZero() || !p.startupDone {
		return
	}
	for _, cd := range p.info.Conditions {
		if cd.Type != "AllContainersRestarting" || cd.LastTransitionTime.IsZero() ||
			cd.Status != "True" && !p.waitingForRestartAll() {
			continue
		}
		// The trigger, when the runtime reported its exit (the kernel's
		// was lost, or came before this tracer): the restart's span is then
		// the one the instance that saw the exit emits.
		for _, ct := range p.containers {
			t := cd.LastTransitionTime
			if ct.exited && !ct.exitAt.IsZero() && !ct.exitAt.After(t.Add(time.Second)) && ct.exitAt.After(t.Add(-restartAllTriggerWindow)) {
				if rule := c.restartRule(ct); rule != nil && rule.Action == fact.RestartRuleRestartAll {
					c.noteRestartAll(ct)
					return
				}
			}
		}
		why := "the pod's AllContainersRestarting condition"
		if cd.Message != "" {
			why += ": " + cd.Message
		}
		c.beginRestartAll(p, nil, cd.LastTransitionTime, why)
	}
}

// reasonRestartingAll is the waiting (and last terminated) reason the
// kubelet gives every container of a pod it restarts in place
// (RestartAllContainers, Kubernetes 1.35+).
const reasonRestartingAll = "RestartingAllContainers"

// waitingForRestartAll: some container of the pod waits to start again
// after an in-place restart removed it.
func (p *pod) waitingForRestartAll() bool {
	for _, st := range p.statuses() {
		if w := st.State.Waiting; w != nil && w.Reason == reasonRestartingAll {
			return true
		}
	}
	return false
}

// restartAllTriggerWindow bounds how long before the AllContainersRestarting
// condition (its whole second) the trigger's exit can be: the kubelet sets it
// at its next sync of the pod, seconds after the exit under load.
const restartAllTriggerWindow = 30 * time.Second

// beginRestartAll opens the pod's restart; its span ID derives from the
// trigger's container ID (the same for every tracer instance that knows
// the trigger), else from the condition's time.
func (c *Correlator) beginRestartAll(p *pod, trigger *container, at time.Time, why string) {
	p.restartAllAt, p.restartAllWhy, p.restartAllByCond = at, why, trigger == nil
	if trigger != nil {
		p.restartAllKey = "restart_all/" + trigger.id
	} else {
		p.restartAllKey = fmt.Sprintf("restart_all@%d", at.Unix())
	}
}

// restartAllID is the span ID of the pod's restart in progress.
func (c *Correlator) restartAllID(p *pod) span.SpanID { return p.spanID(p.restartAllKey) }

// inRestartAll: a run that began during the pod's restart in progress (an
// init container run again).
func (p *pod) inRestartAll(start time.Time) bool {
	return !p.restartAllAt.IsZero() && !start.Before(p.restartAllAt)
}

// restartAllReason names a sibling the kubelet stopped for the pod's
// restart in progress.
func (p *pod) restartAllReason(stop *signalRec) (kubeletRestart, bool) {
	if p.restartAllAt.IsZero() || stop.at.Before(p.restartAllAt.Add(-time.Second)) {
		return kubeletRestart{}, false
	}
	return kubeletRestart{cause: names.CauseKubeletRestart, reason: names.KubeletRestartAllContainers, fromFact: true,
		message: "stopped for the pod's in-place restart: " + p.restartAllWhy}, true
}

// maybeRestartedAll ends the pod's restart once it is Ready again after it,
// every app container having started anew: the pod.restart span, with
// the rule that began it.
func (c *Correlator) maybeRestartedAll(p *pod) {
	if p.restartAllAt.IsZero() || p.info == nil {
		return
	}
	cd, ok := p.readyCondition()
	if !ok || cd.Status != "True" || cd.LastTransitionTime.Before(p.restartAllAt.Truncate(time.Second)) {
		return
	}
	for _, spec := range p.info.Containers {
		if !p.startedSince(spec.Name, p.restartAllAt) {
			return
		}
	}
	end := cd.LastTransitionTime
	if end.Before(p.restartAllAt) {
		end = p.restartAllAt // the API's whole second
	}
	c.restartAllSpan(p, end, "")
}

// startedSince: a run of the named container started at or after t.
func (p *pod) startedSince(name string, t time.Time) bool {
	for _, ct := range p.containers {
		if ct.name == name && !ct.sandbox && !ct.startedAtOr().Before(t) {
			return true
		}
	}
	return false
}

// restartAllSpan emits the pod's restart and closes it; unfinished says
// why it ended before the pod was Ready again.
func (c *Correlator) restartAllSpan(p *pod, end time.Time, unfinished string) {
	attrs := []span.Attr{span.String(names.Message, p.restartAllWhy)}
	status, msg := span.StatusOK, ""
	if unfinished != "" {
		status, msg = span.StatusError, unfinished
	}
	c.emit(p, span.Span{SpanID: c.restartAllID(p), Parent: c.rootID(p), Name: names.SpanPodRestart,
		Start: p.restartAllAt, End: end, Status: status, StatusMessage: msg, Attrs: attrs})
	p.restartAllAt, p.restartAllWhy, p.restartAllKey, p.restartAllByCond, p.restartAllUsed = time.Time{}, "", "", false, false
}
