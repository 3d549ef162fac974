// Spans of a container: its runs, stops, back-off waits and exec sessions.

package correlate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"
)

// ctKey names a container's span by stable facts (its kind and the
// container's ID, which is per attempt), so a restarted tracer derives the
// same span IDs and never reuses one for another span.
func ctKey(kind string, ct *container) string { return kind + "/" + ct.id }

func containerAttrs(ct *container) []span.Attr {
	a := []span.Attr{span.String(names.K8sContainerName, ct.name), span.String(names.ContainerID, ct.id)}
	if ct.attempt > 0 {
		a = append(a, span.Int(names.K8sContainerRestartCount, int64(ct.attempt)))
	}
	image := ct.image
	if ct.pod != nil && ct.name != "" {
		if spec := ct.pod.image(ct.name); spec != "" {
			image = spec
		}
	}
	a = append(a, imageAttrs(image)...)
	if ct.runtime.Name != "" {
		a = append(a, span.String(names.ContainerRuntimeName, ct.runtime.Name))
		if ct.runtime.Version != "" {
			a = append(a, span.String(names.ContainerRuntimeVersion, ct.runtime.Version))
		}
	}
	return a
}

// imageAttrs are container.image.name and .tags for an image reference.
func imageAttrs(ref string) []span.Attr {
	name, tag := splitImage(ref)
	switch {
	case name == "":
		return nil
	case tag == "":
		return []span.Attr{span.String(names.ContainerImageName, name)}
	}
	return []span.Attr{span.String(names.ContainerImageName, name), span.Strings(names.ContainerImageTags, tag)}
}

// splitImage splits an image reference into its name and tag:
// "registry:5000/app:1.2" is "registry:5000/app" and "1.2"; a digest
// reference ("app@sha256:…") has no tag; "app" has none either (the
// implicit latest is not invented).
func splitImage(ref string) (name, tag string) {
	if i := strings.IndexByte(ref, '@'); i >= 0 {
		ref = ref[:i]
	}
	if j := strings.LastIndexByte(ref, ':'); j > strings.LastIndexByte(ref, '/') {
		return ref[:j], ref[j+1:]
	}
	return ref, ""
}

func (ct *container) startedAtOr() time.Time {
	return earliest(ct.initExec, ct.startedAt, ct.createdAt, ct.cgroupAt)
}

// runSpan emits a container's run (container.run, or container.init for an
// init container) with its exit cause.
func (c *Correlator) runSpan(ct *container) {
	p := ct.pod
	ns := p.namespace()
	cause, cattrs := c.cause(ct)
	if !p.ephemeral(ct.name) {
		c.observer(p).ContainerExit(ns, string(cause))
	}

	attrs := containerAttrs(ct)
	attrs = append(attrs, span.String(names.ExitCause, string(cause)), span.Int(names.ProcessPID, int64(ct.initPID)))
	if ct.exitSignal != 0 {
		attrs = append(attrs, span.String(names.SignalName, kernel.SignalName(ct.exitSignal)))
	} else {
		attrs = append(attrs, span.Int(names.ProcessExitCode, int64(ct.exitCode)))
	}
	if len(ct.initArgs) > 0 {
		attrs = append(attrs, span.Strings(names.ProcessCommandArgs, ct.initArgs...))
	}
	attrs = append(attrs, cattrs...)
	attrs = append(attrs, p.runVerdictAttrs(ct, cause, cattrs)...)
	status := span.StatusOK
	msg := ""
	if isDisruptionCause(cause) && ct.disruptionGraceful() {
		// Made to go, and went in time: not the container's failure.
	} else if cause == names.CauseRestartRule && ct.exitCode == 0 {
		// Exited 0, and its rule restarts it: as the spec asks.
	} else if cause != names.CauseCompleted && !(cause == names.CauseKilledByRuntime && !p.terminating.IsZero() && ct.exitSignal == syscall.SIGTERM) {
		status = span.StatusError
		msg = string(cause)
	}
	var events []span.SpanEvent
	for _, s := range ct.signals {
		events = append(events, signalEvent(s))
	}
	if len(ct.signalsFolded) > 0 {
		ev, n := ct.foldedSignals(ct.exitAt)
		events = append(events, ev)
		attrs = append(attrs, span.Int(names.SignalsFolded, int64(n)))
	}
	if ct.probeFailsFolded > 0 {
		attrs = append(attrs, span.Int(names.ProbeFailuresFolded, int64(ct.probeFailsFolded)))
	}
	for _, kind := range slices.Sorted(maps.Keys(ct.sessionsFolded)) {
		attrs = append(attrs, span.Int(names.SessionsFoldedPrefix+kind, int64(ct.sessionsFolded[kind])))
	}
	for _, o := range ct.ooms {
		a := []span.Attr{span.Int(names.OOMVictimPID, int64(o.ev.VictimTGID)), span.String(names.OOMScope, o.scope)}
		if o.memcg != "" {
			a = append(a, span.String(names.OOMMemcg, o.memcg))
		}
		if o.ev != ct.oom {
			// A child of the container, not its init: the run went on.
			a = append(a, span.String(names.OOMVictimComm, o.ev.VictimComm))
		}
		events = append(events, span.SpanEvent{Name: names.EventOOMKill, Time: o.ev.Time, Attrs: a})
	}
	if ct.oomsFolded > 0 {
		attrs = append(attrs, span.Int(names.OOMKillsFolded, int64(ct.oomsFolded)))
	}
	events = append(events, ct.probeFails...)

	start := ct.startedAtOr()
	name, parent := names.SpanContainerRun, c.rootID(p)
	if ct.init {
		name, parent = names.SpanContainerInit, c.startupID(p)
		if p.startupDone && p.inRestartAll(start) {
			parent = c.restartAllID(p) // run again by the pod's in-place restart
			p.restartAllUsed = true
		}
	}
	if p.ephemeral(ct.name) {
		// A debugging session's end: whatever its exit, not the app's error.
		name, status, msg = names.SpanContainerEphemeral, span.StatusOK, ""
	}
	key := ctKey(name, ct)
	c.emit(p, span.Span{SpanID: p.spanID(key), Parent: parent, Name: name, Start: start, End: ct.exitAt,
		Status: status, StatusMessage: msg, Attrs: attrs, Events: events})
}

// stopSpan emits container.stop: from the stop signal to the exit.
func (c *Correlator) stopSpan(ct *container) {
	p := ct.pod
	term := ct.stopSignal()
	kill := ct.signalOf(syscall.SIGKILL)
	start := p.terminating
	if term != nil {
		start = term.at
	} else if kill != nil {
		start = kill.at
	}
	if start.IsZero() {
		return
	}
	attrs := containerAttrs(ct)
	sigkill := kill != nil && (kill.senderKind == names.SenderRuntime || kill.senderKind == names.SenderKubelet)
	attrs = append(attrs, span.Bool(names.Sigkill, sigkill))
	attrs = append(attrs, stopSignalAttrs(ct, term)...)
	status, msg := span.StatusOK, ""
	w, hooked := c.preStopWindow(ct, term) // hooks.go
	killNote := ""
	if sigkill && hooked {
		killNote = w.kubeletKill(kill)
	}
	minGrace := sigkill && !hooked && p.kubeletMinimumGrace(term, kill)
	if minGrace {
		// No grace was left to give (an eviction's grace 0, a hook not in
		// the spec that used it up): the kubelet's minimum, not the app's
		// overrun. With the preStop in the spec, its window decides.
		killNote = fmt.Sprintf("SIGKILL %.1fs after %s: the kubelet's minimum grace (%s), none of the pod's was left",
			kill.at.Sub(term.at).Seconds(), kernel.SignalName(term.sig), minimumGrace)
	}
	if sigkill {
		status = span.StatusError
		msg = "killed with SIGKILL after the grace period"
		if p.grace > 0 && term != nil {
			msg = fmt.Sprintf("SIGKILL %.1fs after %s (grace period %s)", kill.at.Sub(term.at).Seconds(), kernel.SignalName(term.sig), p.grace)
		}
	}
	if sigkill && killNote != "" {
		// The kubelet's decision, not the app's overrun.
		msg = killNote
		attrs = append(attrs, span.Bool(names.GracePeriodOverrun, false))
		if minGrace {
			// The kubelet gave no grace (an eviction): the stop did what it
			// was asked; the note says how it ended.
			status, msg = span.StatusOK, ""
			attrs = append(attrs, span.String(names.Message, killNote))
		}
	} else if sigkill {
		attrs = append(attrs, span.Bool(names.GracePeriodOverrun, true))
		if !p.terminating.IsZero() && !start.Before(p.terminating) {
			// The pod's termination overran; a stop before it (a liveness
			// restart) overran only that stop.
			p.overrun = true
		}
		c.observer(p).GracePeriodOverrun(p.namespace())
	}
	if hooked {
		attrs = append(attrs, w.attrs()...)
		c.noteWindow(ct, w, killNote)
		c.kubeletPreStopSpans(ct, w)
	}
	if p.grace > 0 {
		attrs = append(attrs, span.Float(names.GracePeriodSeconds, p.grace.Seconds()))
	}
	d := ct.exitAt.Sub(start)
	c.observer(p).ContainerStop(p.namespace(), d, sigkill, p.trace.String())
	key := ctKey(names.SpanContainerStop, ct)
	c.emit(p, span.Span{SpanID: p.spanID(key), Parent: c.terminationParent(p), Name: names.SpanContainerStop,
		Start: start, End: ct.exitAt, Status: status, StatusMessage: msg, Attrs: attrs})
}

// stopSignalAttrs describes the stop signal of a container.stop (none
// without one): its name, how the init took it, its sender.
func stopSignalAttrs(ct *container, term *signalRec) []span.Attr {
	if term == nil {
		return nil
	}
	disp := term.disposition.String()
	if term.result == kernel.SignalIgnored {
		disp = "ignored"
	} else if d, ok := ct.delivered[term.sig]; ok {
		disp = d.String()
	}
	attrs := []span.Attr{span.String(names.SignalName, kernel.SignalName(term.sig)), span.String(names.SignalDisposition, disp),
		span.String(names.SignalSenderKind, string(term.senderKind)), span.String(names.SignalSenderComm, term.senderComm),
		span.Int(names.SignalSenderPID, int64(term.senderPID))}
	if term.nsInit && term.disposition == kernel.DispositionDefault {
		attrs = append(attrs, span.Bool(names.SignalPIDNSInit, true))
	}
	return attrs
}

func signalEvent(s signalRec) span.SpanEvent {
	a := []span.Attr{span.String(names.SignalName, kernel.SignalName(s.sig)), span.String(names.SignalSenderKind, string(s.senderKind)),
		span.String(names.SignalSenderComm, s.senderComm), span.Int(names.SignalSenderPID, int64(s.senderPID)),
		span.String(names.SignalResult, s.result.String()), span.String(names.SignalDisposition, s.disposition.String())}
	if !s.toInit {
		a = append(a, span.Bool(names.SignalToChild, true))
	}
	if s.pidnsTeardown {
		a = append(a, span.String(names.Message, "PID namespace teardown: the kernel kills what its init left behind"))
	}
	return span.SpanEvent{Name: names.SignalEventName(kernel.SignalName(s.sig)), Time: s.at, Attrs: a}
}

// sessionSpan emits a hook or probe span for an exec session.
func (c *Correlator) sessionSpan(ct *container, s *session, e *kernel.ExitEvent) {
	p := ct.pod
	if s.kind == names.SessionExec || s.kind == "" {
		s.kind = c.sessionKind(ct, s.args)
	}
	if s.kind == names.SessionExec && (p.info == nil || ct.name == "") && c.shuttingDown {
		// Ended before the pod's spec came (or the container's name, which
		// finds its hooks and probes in it), at this instance's shutdown:
		// it cannot be told from a hook or a probe (container.exec would
		// be a guess, with the span ID of no span the next instance could
		// tell). Counted, not told.
		c.miss(names.MissSessionUnnamedShutdown)
		return
	}
	name := ""
	parent := c.rootID(p)
	switch s.kind {
	case names.SessionPostStart:
		name, parent = names.SpanContainerPostStart, c.startupID(p)
	case names.SessionPreStop:
		name, parent = names.SpanContainerPreStop, c.terminationParent(p)
	case names.SessionProbeStartup, names.SessionProbeReadiness, names.SessionProbeLiveness:
		name = s.kind
		// Part of the start-up: begun before the pod was ready (or before
		// the API server said so, while the start-up settles).
		readyBy := p.readyAt
		if !p.startupDone {
			readyBy = p.readySeen
		}
		if readyBy.IsZero() && p.resumed {
			// No start-up decided here: Ready as the API said.
			readyBy = p.resumedReady
		}
		if readyBy.IsZero() || !s.start.After(readyBy) {
			parent = c.startupID(p)
		} else if e.ExitCode == 0 && e.Signal == 0 {
			return // a passing probe after start-up: not news
		}
	default:
		name = names.SpanContainerExec
	}
	attrs := append(containerAttrs(ct), span.Int(names.ProcessPID, int64(s.pid)), span.Strings(names.ProcessCommandArgs, s.args...))
	status := span.StatusOK
	result := names.ProbeSuccess
	if e.Signal != 0 {
		attrs = append(attrs, span.String(names.SignalName, kernel.SignalName(e.Signal)))
		status, result = span.StatusError, names.ProbeKilled
	} else {
		attrs = append(attrs, span.Int(names.ProcessExitCode, int64(e.ExitCode)))
		if e.ExitCode != 0 {
			status, result = span.StatusError, names.ProbeFailure
		}
	}
	if len(name) > 6 && name[:6] == "probe." {
		attrs = append(attrs, span.String(names.ProbeType, name[6:]), span.String(names.ProbeResult, result))
	}
	if name == names.SessionProbeReadiness && status == span.StatusError {
		p.noteReadinessFail(ct, s, e)
	}
	if !ct.sessionSpanAllowed(name) {
		return // over the cap: counted on the run (podchron.sessions.folded.<kind>)
	}
	key := fmt.Sprintf("%s/%s/%d@%d", name, ct.id, s.pid, s.start.UnixNano())
	ct.sessionKeys = append(ct.sessionKeys, key)
	c.emit(p, span.Span{SpanID: p.spanID(key), Parent: parent, Name: name, Start: s.start, End: e.Time, Status: status, Attrs: attrs})
}

// backoff emits the wait between a container's previous run and this one
// (CrashLoopBackOff shows as growing waits).
func (c *Correlator) backoff(ct *container) {
	p := ct.pod
	if p == nil || ct.sandbox || ct.name == "" || ct.backoffDone {
		return
	}
	// The wait ends when the kubelet creates the next attempt.
	start := ct.startedAtOr()
	if start.IsZero() {
		return
	}
	if p.inRestartAll(start) {
		// Started again by the pod's in-place restart (restart_rules.go):
		// no back-off, a step of the pod.restart span.
		ct.backoffDone = true
		return
	}
	var prev *container
	for _, o := range p.containers {
		if o != ct && o.name == ct.name && o.exited && !o.exitAt.After(start) && (prev == nil || o.exitAt.After(prev.exitAt)) {
			prev = o
		}
	}
	if prev == nil {
		return
	}
	ct.backoffDone = true
	wait := start.Sub(prev.exitAt)
	attrs := append(containerAttrs(ct), span.Float(names.BackoffSeconds, wait.Seconds()), span.String(names.Verdict, backoffVerdict(ct, wait)))
	p.verdict.noteAttempt(ct.name, ct.attempt)
	if ev := p.recentEvent("BackOff", ct.name, prev.exitAt, start); ev != nil {
		attrs = append(attrs, span.String(names.Message, ev.Message))
	}
	c.emit(p, span.Span{SpanID: p.spanID(ctKey("backoff", ct)), Parent: c.rootID(p), Name: names.SpanContainerBackoff,
		Start: prev.exitAt, End: start, Status: span.StatusOK, Attrs: attrs})
}
