// The verdict: what happened to a pod, in plain words, from the facts the
// model holds (causes, scopes, durations, the grace period, hooks, the
// kubelet's kill reasons, an eviction's message). Each phase span carries
// its own (podchron.verdict); the root's sums up the lifecycle: the
// start-up, the restarts, how it ended. Nothing is said that no fact says.

package correlate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// maxVerdict bounds a verdict in bytes (one line): tenant text in it (an
// eviction's message, a waiting reason's) is cut on a UTF-8 boundary.
const maxVerdict = 320

// maxFailureWords bounds the words of a start-up's failure in its verdict.
const maxFailureWords = 160

// maxRestartCauses caps the causes counted per pod for the root's verdict
// (there are fewer causes than this; a bound all the same).
const maxRestartCauses = 16

// podVerdict: what the phase verdicts said, for the root's.
type podVerdict struct {
	startupVerdict     string
	longPole           phaseTime
	hasPole            bool
	terminationVerdict string
	// attempts: the highest attempt seen per container name (its restarts).
	attempts map[string]uint32
	// restartCauses: the runs that ended and were followed by another
	// attempt, by cause, with the words of the last of each.
	restartCauses map[names.Cause]*restartCause
	// lastEnd: how each container's last finished run ended, by name.
	lastEnd map[string]endWords
	// misreported: the kubelet's reason for a container's run the kernel
	// OOM-killed, when it is not OOMKilled, by name (the last such run's;
	// oom_reason.go).
	misreported map[string]string
}

type endWords struct {
	cause names.Cause
	words string
	// early: the run ended before any termination of the pod.
	early bool
}

type restartCause struct {
	n     int
	words string // the last such run's
}

// phaseTime is one measured start-up phase (names.Phase*).
type phaseTime struct {
	name string
	d    time.Duration
}

// longPole is the longest of the phases; ok is false when none was measured.
func longPole(phases []phaseTime) (pole phaseTime, ok bool) {
	for _, ph := range phases {
		if !ok || ph.d > pole.d {
			pole, ok = ph, true
		}
	}
	return pole, ok
}

// bound makes a verdict one line of at most maxVerdict bytes.
func bound(v string) string {
	s, _ := fact.Truncate(strings.Join(strings.Fields(v), " "), maxVerdict)
	return s
}

// secs writes a duration as a person reads it: 41.2 s, or 107 ms under a
// second.
func secs(d time.Duration) string {
	if d < time.Second && d > -time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// phaseWords is how a phase name reads: image_pull is "image pull".
func phaseWords(name string) string { return strings.ReplaceAll(name, "_", " ") }

// startupVerdict says how the start-up went: its time and its long pole,
// or why it never got Ready.
func (p *pod) startupVerdict(d time.Duration, out startupOutcome, pole phaseTime, hasPole bool) string {
	var v string
	switch {
	case out.failure != "":
		// The failure's words (a pull error can be long) come last, cut,
		// so that the long pole and the root's later parts keep their room.
		why, _ := fact.Truncate(out.failure, maxFailureWords)
		v = fmt.Sprintf("never Ready after %s%s: %s", secs(d), poleWords(d, pole, hasPole, " (", ")"), why)
		return bound(v)
	case out.outcome == names.StartupCompleted:
		v = fmt.Sprintf("completed in %s before it was ever Ready", secs(d))
	case out.outcome != "":
		v = fmt.Sprintf("start-up ended after %s without Ready (%s)", secs(d), out.outcome)
	default:
		v = "started in " + secs(d)
	}
	return bound(v + poleWords(d, pole, hasPole, "; ", ""))
}

// poleWords: "long pole: image pull 35.0 s (85 %)" of a start-up of d,
// between before and after; empty without a long pole.
func poleWords(d time.Duration, pole phaseTime, ok bool, before, after string) string {
	if !ok {
		return ""
	}
	w := before + "long pole: " + phaseWords(pole.name) + " " + secs(pole.d)
	if d > 0 {
		w += fmt.Sprintf(" (%.0f %%)", 100*pole.d.Seconds()/d.Seconds())
	}
	return w + after
}

// poleAttrs are the long pole's attributes, none without one.
func poleAttrs(pole phaseTime, ok bool) []span.Attr {
	if !ok {
		return nil
	}
	return []span.Attr{span.String(names.StartupLongPole, pole.name), span.Float(names.StartupLongPoleSeconds, pole.d.Seconds())}
}

// oomWords names the limit an OOM kill ran out of, with the container's
// memory limit when it was the container's own.
func oomWords(ct *container) string {
	scope := ct.oomScope
	limit := ""
	switch scope {
	case names.OOMScopeContainer:
		limit = "of the container"
		if ct.memLimit > 0 {
			limit += ": " + bytesWords(ct.memLimit)
		}
	case names.OOMScopePod:
		limit = "of the pod"
	case names.OOMScopeNodeAllocatable:
		limit = "of the node's allocatable memory"
	case names.OOMScopeNode:
		limit = "none: the node ran out of memory"
	}
	if limit == "" {
		return "OOM-killed"
	}
	return "OOM-killed (limit " + limit + ")"
}

// bytesWords writes a byte count as Kubernetes quantities read: 256Mi.
func bytesWords(b int64) string {
	for _, u := range []struct {
		unit string
		n    int64
	}{{"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if b >= u.n && b%u.n == 0 {
			return fmt.Sprintf("%d%s", b/u.n, u.unit)
		}
	}
	return fmt.Sprintf("%d bytes", b)
}

// causeWords says why a run ended.
func causeWords(ct *container, cause names.Cause) string {
	sig := kernel.SignalName(ct.exitSignal)
	switch cause {
	case names.CauseCompleted:
		return "completed"
	case names.CauseError:
		return fmt.Sprintf("exited with code %d", ct.exitCode)
	case names.CauseOOMKilled:
		return oomWords(ct)
	case names.CauseLivenessRestart:
		return "its liveness probe failed: the kubelet restarted it"
	case names.CauseStartupProbeRestart:
		return "its startup probe failed: the kubelet restarted it"
	case names.CauseKubeletRestart:
		return "the kubelet restarted it"
	case names.CauseKilledByRuntime:
		return "killed by the runtime with " + sig
	case names.CauseKilledInPod:
		return "killed with " + sig + " by a process of the pod"
	case names.CauseKilledExternal:
		return "killed with " + sig + " by a process outside the pod"
	case names.CauseSignal:
		return "died of " + sig
	case names.CauseUnknown:
		return "ended unseen (removed before its exit was seen)"
	}
	return strings.ReplaceAll(string(cause), "_", " ")
}

// runVerdict says how a run ended, on a run that is a restart or was
// followed by one (empty otherwise), and keeps the words for the root.
// cattrs are the run's cause attributes (the kubelet's restart reason).
func (p *pod) runVerdict(ct *container, cause names.Cause, cattrs []span.Attr) string {
	words := causeWords(ct, cause)
	for _, a := range cattrs {
		if r, _ := a.Value.(string); a.Key == names.KubeletRestartReason && r != "" && r != names.KubeletRestartUnknown {
			words += " (" + strings.ReplaceAll(r, "_", " ") + ")"
		}
	}
	v := &p.verdict
	v.noteAttempt(ct.name, ct.attempt)
	if prev, ok := v.lastEnd[ct.name]; ok && ct.attempt > 0 {
		v.countRestart(prev)
	}
	if v.lastEnd == nil {
		v.lastEnd = map[string]endWords{}
	}
	early := p.terminating.IsZero() || ct.exitAt.Before(p.terminating)
	v.lastEnd[ct.name] = endWords{cause: cause, words: words, early: early}
	if ct.attempt == 0 && !p.restarts(ct, cause) {
		return ""
	}
	return bound(fmt.Sprintf("run #%d of %s ended after %s: %s", ct.attempt+1, ct.name, secs(ct.exitAt.Sub(ct.startedAtOr())), words))
}

// noteAttempt keeps the highest attempt of a container seen.
func (v *podVerdict) noteAttempt(name string, attempt uint32) {
	if v.attempts == nil {
		v.attempts = map[string]uint32{}
	}
	v.attempts[name] = max(v.attempts[name], attempt) // names: the pod spec's, bounded
}

// countRestart counts a finished run that another attempt followed.
func (v *podVerdict) countRestart(e endWords) {
	if v.restartCauses == nil {
		v.restartCauses = map[names.Cause]*restartCause{}
	}
	rc := v.restartCauses[e.cause]
	if rc == nil {
		if len(v.restartCauses) >= maxRestartCauses {
			return
		}
		rc = &restartCause{}
		v.restartCauses[e.cause] = rc
	}
	rc.n++
	rc.words = e.words
}

// restarts tells a run the kubelet restarts: one that ended before the
// pod's termination, under a restart policy that restarts it.
func (p *pod) restarts(ct *container, cause names.Cause) bool {
	if !p.terminating.IsZero() && !ct.exitAt.Before(p.terminating) {
		return false
	}
	switch cause {
	case names.CauseLivenessRestart, names.CauseStartupProbeRestart, names.CauseKubeletRestart:
		return true
	}
	if p.info == nil {
		return false
	}
	switch p.info.RestartPolicy {
	case "Always":
		return !ct.init || cause != names.CauseCompleted
	case "OnFailure":
		return cause != names.CauseCompleted
	}
	return false
}

// backoffVerdict says what a back-off waited for.
func backoffVerdict(ct *container, wait time.Duration) string {
	return bound(fmt.Sprintf("%s waited %s in back-off before restart #%d", ct.name, secs(wait), ct.attempt))
}

// terminationVerdict says how the termination went: its time, why it
// began, and how its containers took the stop signal.
func (p *pod) terminationVerdict(d time.Duration, reason, statusMsg, unfinished string) string {
	head := "terminated in " + secs(d)
	if unfinished != "" {
		return bound(fmt.Sprintf("still terminating after %s: %s", secs(d), unfinished))
	}
	var why []string
	if reason == "Evicted" {
		if m := p.evictionMessage(); m != "" {
			head = "evicted by the kubelet: " + strings.TrimRight(strings.TrimSpace(m), ".") + "; " + head
		} else {
			head = "evicted by the kubelet; " + head
		}
	} else if reason != "" {
		head += " (" + reason + ")"
	}
	switch {
	case p.stuck:
		why = append(why, statusMsg)
	case p.forced:
		why = append(why, "forced (grace period 0)")
	case p.overrun:
		why = append(why, p.overrunWords())
	case p.kubeletKillNote != "":
		why = append(why, p.kubeletKillNote)
	default:
		if w := p.stopWords(); w != "" {
			why = append(why, w)
		}
	}
	if w := p.endpointWords(); w != "" && !p.stuck {
		why = append(why, w)
	}
	if len(why) == 0 {
		return bound(head)
	}
	return bound(head + ": " + strings.Join(why, "; "))
}

// stopped is a container's stop in the termination: its stop signal (nil
// when none was seen), that signal's disposition, and its SIGKILL.
type stopped struct {
	ct   *container
	term *signalRec
	disp string
	kill *signalRec // the runtime's or the kubelet's SIGKILL
}

// stops are the app containers' stops in the termination, in order.
func (p *pod) stops() []stopped {
	var out []stopped
	for _, ct := range p.containers {
		if ct.sandbox || ct.name == "" || !ct.exited || !p.terminating.IsZero() && ct.exitAt.Before(p.terminating) {
			continue
		}
		st := stopped{ct: ct, term: ct.stopSignal()}
		if st.term != nil {
			for _, a := range stopSignalAttrs(ct, st.term) {
				if a.Key == names.SignalDisposition {
					st.disp, _ = a.Value.(string)
				}
			}
		}
		if k := ct.signalOf(syscall.SIGKILL); k != nil && (k.senderKind == names.SenderRuntime || k.senderKind == names.SenderKubelet) {
			st.kill = k
		}
		out = append(out, st)
	}
	return out
}

// overrunWords names the container that outlived the grace period and how
// it took the stop signal.
func (p *pod) overrunWords() string {
	grace := ""
	if p.grace > 0 {
		grace = " at the end of the " + strings.Replace(secs(p.grace), ".0 s", " s", 1) + " grace period"
	}
	for _, st := range p.stops() {
		if st.kill == nil {
			continue
		}
		who := "container " + st.ct.name
		if st.term == nil {
			return who + " was SIGKILLed" + grace
		}
		if grace == "" {
			// No grace period known (no API server): when the kill came.
			grace = " (" + secs(st.kill.at.Sub(st.term.at)) + " after it)"
		}
		sig := kernel.SignalName(st.term.sig)
		switch st.disp {
		case "ignored":
			return fmt.Sprintf("%s ignored %s and was SIGKILLed%s", who, sig, grace)
		case "handler":
			return fmt.Sprintf("%s handled %s but did not exit, and was SIGKILLed%s", who, sig, grace)
		}
		return fmt.Sprintf("%s did not exit on %s and was SIGKILLed%s", who, sig, grace)
	}
	return "a container outlived the grace period and was SIGKILLed"
}

// stopWords says how the containers took their stop signal when none was
// SIGKILLed: the slowest exit after it.
func (p *pod) stopWords() string {
	var slow *stopped
	var slowD time.Duration
	n := 0
	for _, st := range p.stops() {
		if st.term == nil {
			continue
		}
		n++
		if d := st.ct.exitAt.Sub(st.term.at); slow == nil || d > slowD {
			s := st
			slow, slowD = &s, d
		}
	}
	if slow == nil {
		return ""
	}
	sig := kernel.SignalName(slow.term.sig)
	how := "exited " + secs(slowD) + " after " + sig
	switch slow.disp {
	case "handler":
		how = "handled " + sig + " and exited in " + secs(slowD)
	case "default":
		how = "died of " + sig + " in " + secs(slowD)
	}
	words := "container " + slow.ct.name + " " + how
	if n > 1 {
		words = fmt.Sprintf("%d containers stopped; the slowest, %s, %s", n, slow.ct.name, how)
	}
	return words + p.signalWait(slow, sig)
}

// signalWaitWorth: a stop signal this long after the termination began is
// part of the termination's story (the kubelet sends it within
// milliseconds of a deletion, after the preStop hook if there is one).
const signalWaitWorth = 2 * time.Second

// signalWait tells how long after the termination began the stop's signal
// came, when that wait is worth telling: a preStop hook, or a kubelet or
// runtime slow to act (2026-12-06, e2e 1: a loaded containerd 1.6 sent the
// SIGTERM 30 s after the deletion, and the verdict said only that the
// container exited at once).
func (p *pod) signalWait(st *stopped, sig string) string {
	if p.terminating.IsZero() || st.term == nil {
		return ""
	}
	w := st.term.at.Sub(p.terminating)
	if w < signalWaitWorth {
		return ""
	}
	words := fmt.Sprintf("; its %s came %s after the termination began", sig, secs(w))
	if spec, _ := p.spec(st.ct.name); spec != nil && spec.PreStop != nil {
		words += ", after its preStop hook"
	}
	return words
}

// endpointLateWorth: a Service withdrawing the pod this long after a
// container's stop signal is part of the termination's story: requests
// still sent to it then may have met an app already shutting down.
const endpointLateWorth = 100 * time.Millisecond

// endpointWords tells a Service that withdrew the pod after its first stop
// signal (endpoints.go): "Service web withdrew it 2.0 s after its SIGTERM".
func (p *pod) endpointWords() string {
	name, at := p.latestSighted(p.withdrawals()) // seen as it happened since the termination began
	if at.IsZero() {
		return ""
	}
	var first *signalRec
	for _, st := range p.stops() {
		if st.term != nil && (first == nil || st.term.at.Before(first.at)) {
			first = st.term
		}
	}
	if first == nil || at.Sub(first.at) < endpointLateWorth {
		return ""
	}
	return fmt.Sprintf("Service %s withdrew it %s after its %s", name, secs(at.Sub(first.at)), kernel.SignalName(first.sig))
}

// rootVerdict sums up the lifecycle: the start-up, the restarts, how it
// ended.
func (p *pod) rootVerdict(unfinished string) string {
	v := &p.verdict
	var parts []string
	if v.startupVerdict != "" {
		parts = append(parts, v.startupVerdict)
	} else if !p.observedFrom.IsZero() {
		parts = append(parts, "started before the tracer")
	}
	if r := v.restartWords(); r != "" {
		parts = append(parts, r)
	}
	told := map[string]bool{}
	for _, name := range slices.Sorted(maps.Keys(v.lastEnd)) {
		// A container's last run that ended on its own, before the end,
		// and the kubelet's other word on its OOM kill (oom_reason.go).
		if e := v.lastEnd[name]; e.early && e.cause != names.CauseCompleted {
			w := e.words
			if r, ok := v.misreported[name]; ok && e.cause == names.CauseOOMKilled {
				w, told[name] = w+", the kubelet said "+r, true
			}
			parts = append(parts, name+": "+w)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v.misreported)) {
		if !told[name] {
			parts = append(parts, name+": OOM-killed by the kernel, the kubelet said "+v.misreported[name])
		}
	}
	switch {
	case v.terminationVerdict != "":
		parts = append(parts, v.terminationVerdict)
	case unfinished != "":
		parts = append(parts, "still alive: "+unfinished)
	case p.info != nil && p.info.Reason == "Evicted":
		parts = append(parts, strings.TrimSuffix("evicted by the kubelet: "+strings.TrimRight(strings.TrimSpace(p.evictionMessage()), "."), ": "))
	case p.info != nil && p.info.Phase != "":
		parts = append(parts, "ended in phase "+p.info.Phase)
	default:
		parts = append(parts, "gone")
	}
	return bound(strings.Join(parts, "; "))
}

// restartWords: "restarted 7 times: OOM-killed (limit of the pod)", the
// causes of the runs that were followed by another, most frequent first.
func (v *podVerdict) restartWords() string {
	n := uint32(0)
	for _, a := range v.attempts {
		n += a
	}
	if n == 0 {
		return ""
	}
	w := fmt.Sprintf("restarted %d times", n)
	if n == 1 {
		w = "restarted once"
	}
	causes := slices.SortedFunc(maps.Values(v.restartCauses), func(a, b *restartCause) int {
		return cmp.Or(b.n-a.n, strings.Compare(a.words, b.words))
	})
	switch len(causes) {
	case 0:
		return w
	case 1:
		return w + ": " + causes[0].words
	}
	var ws []string
	for _, c := range causes {
		ws = append(ws, fmt.Sprintf("%d× %s", c.n, c.words))
	}
	return w + ": " + strings.Join(ws, ", ")
}

// endTermination is the termination's verdict, kept for the root's.
// statusMsg is the termination span's status message.
func (p *pod) endTermination(d time.Duration, statusMsg, unfinished string) string {
	reason, _, ok := p.disruption()
	if !ok {
		reason = p.terminationReason
		if reason == "" && p.info != nil {
			reason = p.info.Reason
		}
	}
	p.verdict.terminationVerdict = p.terminationVerdict(d, reason, statusMsg, unfinished)
	return p.verdict.terminationVerdict
}

// rootVerdictAttrs are the root's verdict, its start-up's long pole and
// the pod status's reason (semconv k8s.pod.status.reason).
func (p *pod) rootVerdictAttrs(unfinished string) []span.Attr {
	attrs := []span.Attr{span.String(names.Verdict, p.rootVerdict(unfinished))}
	attrs = append(attrs, poleAttrs(p.verdict.longPole, p.verdict.hasPole)...)
	if p.info != nil && p.info.Reason != "" {
		attrs = append(attrs, span.String(names.K8sPodStatusReason, p.info.Reason))
	}
	return attrs
}

// lastTerminatedReason is why a run ended as Kubernetes writes it
// (k8s.container.status.last_terminated_reason): the runtime's reason,
// else the API status's for this container ID.
func (p *pod) lastTerminatedReason(ct *container) string {
	if ct.reason != "" {
		return ct.reason
	}
	if p.info == nil || ct.id == "" {
		return ""
	}
	for _, sts := range [][]fact.ContainerStatus{p.info.Statuses, p.info.InitStatuses, p.info.EphemeralStatuses} {
		for _, st := range sts {
			for _, t := range []*fact.Terminated{st.State.Terminated, st.LastState.Terminated} {
				if t != nil && t.ContainerID == ct.id && t.Reason != "" {
					return t.Reason
				}
			}
		}
	}
	return ""
}

// runVerdictAttrs are a run's verdict (on a restart, see runVerdict) and
// why it ended as Kubernetes writes it.
func (p *pod) runVerdictAttrs(ct *container, cause names.Cause, cattrs []span.Attr) []span.Attr {
	var attrs []span.Attr
	if r := p.lastTerminatedReason(ct); r != "" {
		attrs = append(attrs, span.String(names.K8sContainerStatusLastTerminatedReason, r))
	}
	if p.ephemeral(ct.name) {
		return attrs
	}
	if v := p.runVerdict(ct, cause, cattrs); v != "" {
		attrs = append(attrs, span.String(names.Verdict, v))
	}
	return attrs
}
