package correlate

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/probe"
)

func sigNum(n int) syscall.Signal { return syscall.Signal(n) }

// Span keys: stable names for a pod's spans (ids derive from them).
const (
	keyRoot        = "root"
	keyStartup     = "startup"
	keyTermination = "termination"
)

// ctKey names a container's span by stable facts (its kind and the
// container's ID, which is per attempt), so a restarted tracer derives the
// same span IDs and never reuses one for another span.
func ctKey(kind string, ct *container) string { return kind + "/" + ct.id }

func (c *Correlator) rootID(p *pod) SpanID        { return p.spanID(keyRoot) }
func (c *Correlator) startupID(p *pod) SpanID     { return p.spanID(keyStartup) }
func (c *Correlator) terminationID(p *pod) SpanID { return p.spanID(keyTermination) }

// terminationParent is the parent for spans of the pod's ending.
func (c *Correlator) terminationParent(p *pod) SpanID {
	if p.terminating.IsZero() {
		return c.rootID(p)
	}
	return c.terminationID(p)
}

func containerAttrs(ct *container) []Attr {
	a := []Attr{String("k8s.container.name", ct.name), String("container.id", ct.id)}
	if ct.attempt > 0 {
		a = append(a, Int("podchron.restart.count", int64(ct.attempt)))
	}
	return a
}

// cause explains why a container's init process ended.
func (c *Correlator) cause(ct *container) (string, []Attr) {
	p := ct.pod
	var attrs []Attr
	if ct.unknownExit {
		return "unknown", []Attr{String("message", "removed before its exit was seen (kernel events lost or the tracer started late)")}
	}
	// The OOM kill is the cause when it killed the init (the kernel's view),
	// or when the runtime says OOMKilled and the kernel saw no OOM kill at
	// all (lost, or before the tracer). The runtime's reason alone is not
	// enough: it says OOMKilled for a child's OOM kill too.
	if ct.oom != nil || ct.reason == "OOMKilled" && len(ct.ooms) == 0 {
		if ct.oom != nil {
			attrs = append(attrs, Int("podchron.oom.victim.pid", int64(ct.oom.VictimTGID)),
				String("podchron.oom.victim.comm", ct.oom.VictimComm), String("podchron.oom.scope", ct.oomScope))
			if ct.oomMemcg != "" {
				attrs = append(attrs, String("podchron.oom.memcg", ct.oomMemcg))
			}
			if ct.oom.HasRSS {
				attrs = append(attrs, Int("podchron.oom.anon_rss_kb", int64(ct.oom.AnonRSSKB)))
			}
		}
		return "oom_killed", attrs
	}
	if cause, a := c.livenessCause(ct); cause != "" {
		return cause, a
	}
	if cause, a := ct.disruptionCause(); cause != "" {
		return cause, a
	}
	if ct.exitSignal == 0 {
		if p != nil && p.info != nil && p.info.Reason == "Evicted" {
			return "evicted", nil
		}
		if ct.exitCode == 0 {
			return "completed", nil
		}
		if stop := ct.stopSignal(); stop != nil && stop.at.Before(ct.exitAt) && gracefulExit(ct.exitCode, stop.sig) {
			// The app handled the stop signal and exited the way shells and
			// many runtimes report it (128+signal): a graceful stop.
			return "completed", []Attr{String("message", fmt.Sprintf("exit code %d after %s from the %s: a graceful stop",
				ct.exitCode, probe.SignalName(stop.sig), stop.senderKind))}
		}
		return "error", nil
	}
	sig := ct.signalOf(ct.exitSignal)
	if sig == nil && ct.exitSignal == syscall.SIGTERM {
		sig = ct.signalOf(syscall.SIGTERM)
	}
	if sig != nil {
		attrs = append(attrs, String("podchron.signal.sender.kind", sig.senderKind),
			String("podchron.signal.sender.comm", sig.senderComm), Int("podchron.signal.sender.pid", int64(sig.senderPID)))
	}
	if p != nil {
		if ev := p.recentEvent("Killing", ct.name, ct.startedAtOr(), ct.exitAt); ev != nil && containsLiveness(ev.Message) {
			return "liveness_restart", append(attrs, String("message", ev.Message))
		}
		if p.info != nil && p.info.Reason == "Evicted" || p.recentEvent("Evicted", "", ct.startedAtOr(), ct.exitAt) != nil {
			return "evicted", attrs
		}
	}
	if sig == nil {
		return "signal", attrs
	}
	switch sig.senderKind {
	case "runtime", "kubelet":
		return "killed_by_runtime", attrs
	case "in_pod":
		return "killed_in_pod", attrs
	case "kernel":
		return "signal", attrs
	}
	return "killed_external", attrs
}

// stopSignal is how the runtime asked the container's init to stop: its
// first signal to it other than SIGKILL (SIGTERM, or the image's STOPSIGNAL
// or the pod's lifecycle.stopSignal, e.g. SIGQUIT), else any SIGTERM it got.
func (ct *container) stopSignal() *signalRec {
	for i := range ct.signals {
		s := &ct.signals[i]
		if s.toInit && s.sig != syscall.SIGKILL && (s.senderKind == "runtime" || s.senderKind == "kubelet") {
			return s
		}
	}
	return ct.signalOf(syscall.SIGTERM)
}

// gracefulExit tells an exit code that reports the stop signal handled:
// 128+signal (what a shell's trap and most runtimes exit with), or 130 for
// an interrupt-style handler.
func gracefulExit(code int, sig syscall.Signal) bool {
	return code == 128+int(sig) || code == 130
}

// livenessCause tells a kubelet restart after failed liveness probes, whatever
// the exit code (a process that handles SIGTERM exits 0): the kubelet's
// Killing event says so, or, without it (events lag, or no API server), the
// runtime's SIGTERM came right after a failed liveness probe seen in the
// kernel while the pod was not being deleted.
func (c *Correlator) livenessCause(ct *container) (string, []Attr) {
	p := ct.pod
	if p == nil {
		return "", nil
	}
	term := ct.stopSignal()
	var attrs []Attr
	if term != nil {
		attrs = append(attrs, String("podchron.signal.sender.kind", term.senderKind),
			String("podchron.signal.sender.comm", term.senderComm), Int("podchron.signal.sender.pid", int64(term.senderPID)))
	}
	if ev := p.recentEvent("Killing", ct.name, ct.startedAtOr(), ct.exitAt); ev != nil {
		switch {
		case strings.Contains(ev.Message, "failed startup probe"):
			return "startup_probe_restart", append(attrs, String("message", ev.Message))
		case containsLiveness(ev.Message):
			return "liveness_restart", append(attrs, String("message", ev.Message))
		}
	}
	if term == nil || (term.senderKind != "runtime" && term.senderKind != "kubelet") || p.info != nil && p.info.DeletionTimestamp != nil {
		return "", nil
	}
	// A failed startup probe makes the kubelet restart the container too,
	// before it ever counted as started.
	if gap := term.at.Sub(ct.lastStartupFail); !ct.lastStartupFail.IsZero() && gap >= 0 && gap < livenessKillWindow &&
		(ct.lastLivenessFail.IsZero() || ct.lastStartupFail.After(ct.lastLivenessFail)) {
		return "startup_probe_restart", append(attrs, String("message", "stopped by the runtime right after a failed startup probe"))
	}
	if ct.lastLivenessFail.IsZero() {
		return "", nil
	}
	if gap := term.at.Sub(ct.lastLivenessFail); gap >= 0 && gap < livenessKillWindow {
		return "liveness_restart", append(attrs, String("message", "stopped by the runtime right after a failed liveness probe"))
	}
	return "", nil
}

// livenessKillWindow: a runtime SIGTERM this soon after a failed liveness
// probe is the kubelet's restart.
const livenessKillWindow = 5 * time.Second

func containsLiveness(msg string) bool {
	return len(msg) > 0 && (contains(msg, "failed liveness probe") || contains(msg, "Liveness"))
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func (ct *container) startedAtOr() time.Time {
	return earliest(ct.initExec, ct.startedAt, ct.createdAt, ct.cgroupAt)
}

// settle is how long a finished container or exec session waits for the
// runtime's view (its name, its reason) before its spans are emitted anyway:
// the kernel usually reports an exit before the runtime poll does.
const settle = 1500 * time.Millisecond

// containerExited records a container's end; its spans follow once settled.
func (c *Correlator) containerExited(ct *container) {
	if ct.pod == nil || ct.sandbox || ct.finalized {
		return
	}
	ct.settleBy = c.now.Add(settle)
	c.settleContainer(ct, false)
}

// settleContainer emits a finished container's spans once the runtime has
// named it and given its reason, or once the settle time passed (or force).
func (c *Correlator) settleContainer(ct *container, force bool) {
	known := ct.name != "" && (ct.reason != "" || ct.runtimeExit)
	if !force && !known && c.now.Before(ct.settleBy) {
		return
	}
	for _, sd := range ct.doneSessions {
		c.sessionSpan(ct, sd.s, sd.e)
	}
	ct.doneSessions = nil
	if ct.exited && !ct.finalized {
		ct.finalized = true
		if !ct.sandbox {
			c.finalizeContainer(ct)
		}
	}
}

// settleAll settles what is due.
func (c *Correlator) settleAll() {
	for _, uid := range sortedKeys(c.pods) {
		c.settlePod(c.pods[uid], false)
	}
}

// settlePod settles a pod's containers (force: whatever their state).
func (c *Correlator) settlePod(p *pod, force bool) {
	for _, ct := range p.containers {
		if (ct.exited && !ct.finalized) || len(ct.doneSessions) > 0 {
			c.settleContainer(ct, force)
		}
	}
}

// finalizeContainer emits the spans a container's end closes.
func (c *Correlator) finalizeContainer(ct *container) {
	p := ct.pod
	ns := p.namespace()
	cause, cattrs := c.cause(ct)
	c.cfg.Observer.ContainerExit(ns, cause)

	attrs := containerAttrs(ct)
	attrs = append(attrs, String("podchron.exit.cause", cause), Int("process.pid", int64(ct.initPID)))
	if ct.exitSignal != 0 {
		attrs = append(attrs, String("podchron.signal", probe.SignalName(ct.exitSignal)))
	} else {
		attrs = append(attrs, Int("process.exit.code", int64(ct.exitCode)))
	}
	if len(ct.initArgs) > 0 {
		attrs = append(attrs, Strings("process.command_args", ct.initArgs...))
	}
	attrs = append(attrs, cattrs...)
	status := StatusOK
	msg := ""
	if isDisruptionCause(cause) && ct.disruptionGraceful() {
		// Made to go, and went in time: not the container's failure.
	} else if cause != "completed" && !(cause == "killed_by_runtime" && !p.terminating.IsZero() && ct.exitSignal == syscall.SIGTERM) {
		status = StatusError
		msg = cause
	}
	var events []SpanEvent
	for _, s := range ct.signals {
		events = append(events, signalEvent(s))
	}
	if len(ct.signalsFolded) > 0 {
		ev, n := ct.foldedSignals(ct.exitAt)
		events = append(events, ev)
		attrs = append(attrs, Int("podchron.signals.folded", int64(n)))
	}
	if ct.probeFailsFolded > 0 {
		attrs = append(attrs, Int("podchron.probe_failures.folded", int64(ct.probeFailsFolded)))
	}
	for _, kind := range sortedKeys(ct.sessionsFolded) {
		attrs = append(attrs, Int("podchron.sessions.folded."+kind, int64(ct.sessionsFolded[kind])))
	}
	for _, o := range ct.ooms {
		a := []Attr{Int("podchron.oom.victim.pid", int64(o.ev.VictimTGID)), String("podchron.oom.scope", o.scope)}
		if o.memcg != "" {
			a = append(a, String("podchron.oom.memcg", o.memcg))
		}
		if o.ev != ct.oom {
			// A child of the container, not its init: the run went on.
			a = append(a, String("podchron.oom.victim.comm", o.ev.VictimComm))
		}
		events = append(events, SpanEvent{Name: "oom_kill", Time: o.ev.Time, Attrs: a})
	}
	if ct.oomsFolded > 0 {
		attrs = append(attrs, Int("podchron.oom.kills_folded", int64(ct.oomsFolded)))
	}
	events = append(events, ct.probeFails...)

	start := ct.startedAtOr()
	name, parent := "container.run", c.rootID(p)
	if ct.init {
		name, parent = "container.init", c.startupID(p)
	}
	key := ctKey(name, ct)
	c.emit(p, Span{SpanID: p.spanID(key), Parent: parent, Name: name, Start: start, End: ct.exitAt,
		Status: status, StatusMessage: msg, Attrs: attrs, Events: events})

	// The stop: SIGTERM (or the runtime's first signal) to exit.
	if stop := ct.stopSignal(); !p.terminating.IsZero() || stop != nil && stop.senderKind == "runtime" {
		c.stopSpan(ct)
	}
	c.maybeStarted(p)
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
	sigkill := kill != nil && (kill.senderKind == "runtime" || kill.senderKind == "kubelet")
	attrs = append(attrs, Bool("podchron.sigkill", sigkill))
	if term != nil {
		disp := term.disposition.String()
		if term.result == probe.SignalIgnored {
			disp = "ignored"
		} else if d, ok := ct.delivered[term.sig]; ok {
			disp = d.String()
		}
		attrs = append(attrs, String("podchron.signal", probe.SignalName(term.sig)), String("podchron.signal.disposition", disp),
			String("podchron.signal.sender.kind", term.senderKind), String("podchron.signal.sender.comm", term.senderComm),
			Int("podchron.signal.sender.pid", int64(term.senderPID)))
		if term.nsInit && term.disposition == probe.DispositionDefault {
			attrs = append(attrs, Bool("podchron.signal.pidns_init", true))
		}
	}
	status, msg := StatusOK, ""
	if sigkill {
		status = StatusError
		msg = "killed with SIGKILL after the grace period"
		if p.grace > 0 && term != nil {
			msg = fmt.Sprintf("SIGKILL %.1fs after %s (grace period %s)", kill.at.Sub(term.at).Seconds(), probe.SignalName(term.sig), p.grace)
		}
		attrs = append(attrs, Bool("podchron.grace_period.overrun", true))
		if !p.terminating.IsZero() && !start.Before(p.terminating) {
			// The pod's termination overran; a stop before it (a liveness
			// restart) overran only that stop.
			p.overrun = true
		}
		c.cfg.Observer.GracePeriodOverrun(p.namespace())
	}
	if p.grace > 0 {
		attrs = append(attrs, Float("podchron.grace_period.seconds", p.grace.Seconds()))
	}
	d := ct.exitAt.Sub(start)
	c.cfg.Observer.ContainerStop(p.namespace(), d, sigkill)
	key := ctKey("container.stop", ct)
	c.emit(p, Span{SpanID: p.spanID(key), Parent: c.terminationParent(p), Name: "container.stop",
		Start: start, End: ct.exitAt, Status: status, StatusMessage: msg, Attrs: attrs})
}

func signalEvent(s signalRec) SpanEvent {
	a := []Attr{String("podchron.signal", probe.SignalName(s.sig)), String("podchron.signal.sender.kind", s.senderKind),
		String("podchron.signal.sender.comm", s.senderComm), Int("podchron.signal.sender.pid", int64(s.senderPID)),
		String("podchron.signal.result", s.result.String()), String("podchron.signal.disposition", s.disposition.String())}
	if !s.toInit {
		a = append(a, Bool("podchron.signal.to_child", true))
	}
	if s.pidnsTeardown {
		a = append(a, String("message", "PID namespace teardown: the kernel kills what its init left behind"))
	}
	return SpanEvent{Name: "signal " + probe.SignalName(s.sig), Time: s.at, Attrs: a}
}

// sessionDone records a finished exec session; its span follows once the
// container is named (see settleContainer).
func (c *Correlator) sessionDone(ct *container, s *session, e *probe.ExitEvent) {
	if ct.pod == nil {
		return
	}
	ct.doneSessions = append(ct.doneSessions, doneSession{s, e})
	kind := s.kind
	if kind == "exec" || kind == "" {
		kind = c.sessionKind(ct, s.args)
	}
	ok := e.ExitCode == 0 && e.Signal == 0
	switch {
	case kind == "probe.liveness" && !ok:
		ct.lastLivenessFail = e.Time
	case kind == "probe.startup" && !ok:
		ct.lastStartupFail = e.Time
	case ok && !ct.pod.startupDone && (kind == "probe.readiness" || kind == "probe.startup" || kind == "poststart"):
		// Only until the start-up is out: a probe every few seconds for
		// the pod's whole life must not pile up here.
		ct.pod.addReadyEvidence(e.Time)
	}
	if ct.settleBy.Before(c.now.Add(settle)) && !ct.exited {
		ct.settleBy = c.now.Add(settle)
	}
	if ct.name != "" {
		c.settleContainer(ct, true)
	}
}

type doneSession struct {
	s *session
	e *probe.ExitEvent
}

// sessionSpan emits a hook or probe span for an exec session.
func (c *Correlator) sessionSpan(ct *container, s *session, e *probe.ExitEvent) {
	p := ct.pod
	if s.kind == "exec" || s.kind == "" {
		s.kind = c.sessionKind(ct, s.args)
	}
	name := ""
	parent := c.rootID(p)
	switch s.kind {
	case "poststart":
		name, parent = "container.poststart", c.startupID(p)
	case "prestop":
		name, parent = "container.prestop", c.terminationParent(p)
	case "probe.startup", "probe.readiness", "probe.liveness":
		name = s.kind
		// Part of the start-up: begun before the pod was ready (or before
		// the API server said so, while the start-up settles).
		readyBy := p.readyAt
		if !p.startupDone {
			readyBy = p.readySeen
		}
		if readyBy.IsZero() || !s.start.After(readyBy) {
			parent = c.startupID(p)
		} else if e.ExitCode == 0 && e.Signal == 0 {
			return // a passing probe after start-up: not news
		}
	default:
		name = "container.exec"
	}
	attrs := append(containerAttrs(ct), Int("process.pid", int64(s.pid)), Strings("process.command_args", s.args...))
	status := StatusOK
	result := "success"
	if e.Signal != 0 {
		attrs = append(attrs, String("podchron.signal", probe.SignalName(e.Signal)))
		status, result = StatusError, "killed"
	} else {
		attrs = append(attrs, Int("process.exit.code", int64(e.ExitCode)))
		if e.ExitCode != 0 {
			status, result = StatusError, "failure"
		}
	}
	if len(name) > 6 && name[:6] == "probe." {
		attrs = append(attrs, String("podchron.probe.type", name[6:]), String("podchron.probe.result", result))
	}
	if !ct.sessionSpanAllowed(name) {
		return // over the cap: counted on the run (podchron.sessions.folded.<kind>)
	}
	key := fmt.Sprintf("%s/%s/%d@%d", name, ct.id, s.pid, s.start.UnixNano())
	c.emit(p, Span{SpanID: p.spanID(key), Parent: parent, Name: name, Start: s.start, End: e.Time, Status: status, Attrs: attrs})
}

func (c *Correlator) cniSpan(p *pod, r *cniRun, parent SpanID) Span {
	attrs := []Attr{String("podchron.cni.plugin", r.plugin), String("podchron.cni.command", r.command),
		String("container.id", r.containerID), Int("process.pid", int64(r.pid))}
	if r.ifname != "" {
		attrs = append(attrs, String("podchron.cni.ifname", r.ifname))
	}
	if r.netns != "" {
		attrs = append(attrs, String("podchron.cni.netns", r.netns))
	}
	status := StatusOK
	if r.signal != 0 {
		attrs = append(attrs, String("podchron.signal", probe.SignalName(r.signal)))
		status = StatusError
	} else {
		attrs = append(attrs, Int("process.exit.code", int64(r.exitCode)))
		if r.exitCode != 0 {
			status = StatusError
		}
	}
	key := fmt.Sprintf("cni/%s/%s/%d@%d", r.command, r.plugin, r.pid, r.start.UnixNano())
	return Span{SpanID: p.spanID(key), Parent: parent, Name: "cni." + r.command + " " + r.plugin,
		Start: r.start, End: r.end, Status: status, Attrs: attrs}
}

// refineReady sharpens the Ready condition's time, which the API server keeps
// in whole seconds (truncated): the pod became ready in [cond, cond+1s), no
// later than the tracer saw it, at the last kernel-observed readiness
// evidence in that window; cond when there is none.
func refineReady(cond, seen time.Time, evidence []time.Time) time.Time {
	upper := cond.Add(time.Second)
	// Kernel stamps are converted from the boot clock and can be a few ms
	// off the wall clock the API fact was seen by: allow the settle time.
	if !seen.IsZero() && seen.Add(settle).Before(upper) {
		upper = seen.Add(settle)
	}
	ready := cond
	for _, t := range evidence {
		if !t.Before(cond) && !t.After(upper) && t.After(ready) {
			ready = t
		}
	}
	return ready
}

// maybeStarted emits the startup phase once the pod is ready.
func (c *Correlator) maybeStarted(p *pod) {
	if p.startupDone {
		if t, ok := p.condition("Ready"); ok && !p.gaveUpAt.IsZero() && !p.lateReady {
			// Ready after the model gave up on the start-up: say when.
			p.lateReady = true
			p.addRootEvent(SpanEvent{Name: "podchron.ready_after_startup_gave_up", Time: t,
				Attrs: []Attr{Float("podchron.startup.seconds", t.Sub(p.startupStart()).Seconds())}})
		}
		return
	}
	var ready time.Time
	t, ok := p.condition("Ready")
	if !ok && !p.readySeen.IsZero() {
		// Ready was seen and is gone again (a deletion right after):
		// the start-up still ended then.
		t, ok = p.readyAt0, true
	}
	if ok {
		if p.readySeen.IsZero() {
			p.readySeen = c.now
			p.readyAt0 = t
		}
		// Wait a little for the kernel's view of what made the pod ready
		// (its events can trail the API server's by the ring buffer's poll).
		if due := p.readySeen.Add(settle); c.now.Before(due) && !p.finishing {
			p.startupSettle = due
			return
		}
		ready = refineReady(t, p.readySeen, p.readyEvidence)
	} else if p.info == nil {
		// No API server: started once every app container's init process
		// ran. The sandbox must be known, or its pause process would pass
		// for an app container.
		if p.sandboxID == "" {
			return
		}
		var apps int
		for _, ct := range p.containers {
			if ct.sandbox || ct.init {
				continue
			}
			if ct.name == "" {
				// Wait a little for the runtime to name it.
				if p.startupSettle.IsZero() {
					p.startupSettle = c.now.Add(settle)
				}
				if c.now.Before(p.startupSettle) {
					return
				}
			}
			apps++
			if ct.initExec.IsZero() {
				if ct.startedAt.IsZero() {
					return
				}
				// The runtime reports it started a moment before the
				// kernel sees its command exec: wait a little for that.
				if due := ct.startedAt.Add(settle); c.now.Before(due) && !p.finishing {
					if p.startupSettle.Before(due) {
						p.startupSettle = due
					}
					return
				}
			}
			ready = latest(ready, ct.initExec, ct.startedAt)
		}
		if apps == 0 || c.apiExpected() {
			return
		}
	} else {
		return
	}
	c.emitStartup(p, ready, startupOutcome{})
}

// emitStartup ends the start-up at end: Ready, or (out.failure set) the
// moment the model gave up on it. It emits the phase's spans.
func (c *Correlator) emitStartup(p *pod, end time.Time, out startupOutcome) {
	ready := end
	p.startupDone = true
	p.readyAt = ready
	p.readyEvidence = nil
	if !p.observedFrom.IsZero() && ready.Before(p.observedFrom) {
		return // started before the tracer: an earlier instance reported it
	}
	start := p.startupStart()
	id := c.startupID(p)
	// Scheduling.
	if sched, ok := p.condition("PodScheduled"); ok && p.info != nil {
		c.emit(p, Span{SpanID: p.spanID("scheduling"), Parent: id, Name: "pod.scheduling", Start: p.info.CreatedAt, End: sched, Status: StatusOK})
	}
	// The sandbox and its network.
	if !p.sandboxCreated.IsZero() {
		sbID := p.spanID("sandbox")
		end := latest(p.sandboxCreated, p.sandboxReady)
		for _, ct := range p.containers {
			if ct.sandbox && ct.initExec.After(end) {
				end = ct.initExec
			}
		}
		var sattrs []Attr
		if p.sandboxID != "" {
			sattrs = append(sattrs, String("container.id", p.sandboxID))
		}
		for _, r := range p.cniAdd {
			if r.done {
				c.emit(p, c.cniSpan(p, r, sbID))
			}
		}
		c.emit(p, Span{SpanID: sbID, Parent: id, Name: "pod.sandbox", Start: p.sandboxCreated, End: end, Status: StatusOK, Attrs: sattrs})
	}
	// Image pulls.
	for _, name := range sortedKeys(p.pulls) {
		pl := p.pulls[name]
		if pl.start.IsZero() || pl.end.IsZero() && pl.failedAt.IsZero() {
			continue
		}
		c.emit(p, c.pullSpan(p, pl, id))
	}
	// Each app container's start: created -> its init process runs.
	for _, ct := range p.containers {
		if ct.sandbox || ct.init {
			continue
		}
		s := earliest(ct.createdAt, ct.cgroupAt)
		e := latest(ct.startedAt, ct.initExec)
		if s.IsZero() || e.IsZero() {
			continue
		}
		attrs := containerAttrs(ct)
		if len(ct.initArgs) > 0 {
			attrs = append(attrs, Strings("process.command_args", ct.initArgs...), Int("process.pid", int64(ct.initPID)))
		}
		c.emit(p, Span{SpanID: p.spanID(ctKey("start", ct)), Parent: id, Name: "container.start", Start: s, End: e, Status: StatusOK, Attrs: attrs})
	}
	attrs := []Attr{String("podchron.owner.kind", p.ownerKind())}
	status, msg := StatusOK, ""
	if out.failure != "" {
		status, msg = StatusError, out.failure
		attrs = append(attrs, String("podchron.startup.outcome", out.outcome))
		if out.container != "" {
			attrs = append(attrs, String("k8s.container.name", out.container))
		}
		if out.reason != "" {
			attrs = append(attrs, String("podchron.waiting.reason", out.reason))
		}
	} else {
		if out.outcome != "" {
			attrs = append(attrs, String("podchron.startup.outcome", out.outcome))
		}
		c.cfg.Observer.PodStartup(p.namespace(), p.ownerKind(), ready.Sub(start))
	}
	c.emit(p, Span{SpanID: id, Parent: c.rootID(p), Name: "pod.startup", Start: start, End: ready, Status: status,
		StatusMessage: msg, Attrs: attrs})
}

// maybeGone ends the pod when its object is gone (or, without an API
// server, when its sandbox and cgroups are).
func (c *Correlator) maybeGone(p *pod, at time.Time) {
	if p.finished {
		return
	}
	gone := false
	switch {
	case p.info != nil && p.info.Deleted:
		// The object is gone. After a forced deletion (or a kubelet that
		// lost track of it) the containers may still run: the termination
		// lasts until they exit.
		gone = c.lingering(p) == ""
		if !gone && p.apiGoneAt.IsZero() {
			p.apiGoneAt = at
			p.addRootEvent(SpanEvent{Name: "podchron.api_object_deleted", Time: at,
				Attrs: []Attr{String("podchron.lingering.containers", c.lingering(p))}})
		}
	case p.info == nil || (c.apiKnown && !c.apiUp):
		gone = !p.sandboxRemoved.IsZero() || !p.cgroupRemoved.IsZero()
	case !p.cgroupRemoved.IsZero() && p.info.DeletionTimestamp == nil:
		// Done on this node, whatever the API still holds (a Job's pod
		// kept for its logs, an evicted pod, a static pod). A pod being
		// deleted waits for its object instead: a finalizer can keep it
		// Terminating, and that is reported (stuck).
		gone = true
	}
	if !gone {
		return
	}
	c.finishPod(p, at, "")
}

// lingering names the pod's containers whose init process still runs
// (started, no exit seen, cgroup not removed), "" when there are none.
func (c *Correlator) lingering(p *pod) string {
	if !p.sandboxRemoved.IsZero() || !p.cgroupRemoved.IsZero() {
		return ""
	}
	var names []string
	for _, ct := range p.containers {
		if ct.sandbox || ct.exited || ct.initPID == 0 {
			continue
		}
		if ref := c.cgroups[ct.cgroupID]; ref != nil && ref.removed {
			continue
		}
		names = append(names, ct.name)
	}
	return strings.Join(names, ",")
}

// lingerLimit bounds how long a deleted pod's trace waits for processes
// that outlive the pod object.
const lingerLimit = 10 * time.Minute

// goneRetention is how long a finished pod is remembered (see Correlator.gone).
const goneRetention = 5 * time.Minute

// finishPod emits the termination phase and the root span, and forgets the pod.
func (c *Correlator) finishPod(p *pod, at time.Time, unfinished string) {
	if p.finished {
		return
	}
	p.finishing = true
	if !p.startupDone && !p.readySeen.IsZero() {
		c.maybeStarted(p) // a start-up still settling
	}
	if !p.startupDone {
		c.endStartupUnready(p, at, "gone", "gone before Ready")
	}
	c.settlePod(p, true)
	c.emitResandboxes(p, true)
	p.finished = true
	p.goneAt = at
	// Containers still running (no exit seen): close them as unfinished.
	for _, ct := range p.containers {
		if !ct.sandbox && !ct.exited && !ct.startedAtOr().IsZero() && unfinished != "" {
			c.emit(p, Span{SpanID: p.spanID(ctKey("container.run", ct)), Parent: c.rootID(p), Name: "container.run",
				Start: ct.startedAtOr(), End: at, Status: StatusUnset, StatusMessage: "still running: " + unfinished, Attrs: containerAttrs(ct)})
		}
	}
	if !p.terminating.IsZero() {
		c.terminationSpan(p, at, unfinished)
	}
	start := p.firstSeen
	if p.info != nil && !p.info.CreatedAt.IsZero() {
		start = p.info.CreatedAt
	}
	start = earliest(start, p.sandboxCreated)
	for _, ct := range p.containers {
		start = earliest(start, ct.startedAtOr())
	}
	attrs := []Attr{String("podchron.owner.kind", p.ownerKind())}
	if p.info != nil {
		if p.info.OwnerName != "" {
			attrs = append(attrs, String("podchron.owner.name", p.info.OwnerName))
		}
		if p.info.QOSClass != "" {
			attrs = append(attrs, String("podchron.qos_class", p.info.QOSClass))
		}
		if p.info.Phase != "" {
			attrs = append(attrs, String("podchron.phase", p.info.Phase))
		}
	}
	status, msg := StatusOK, ""
	if unfinished != "" {
		status, msg = StatusUnset, "pod still alive: "+unfinished
	}
	if p.stuck {
		attrs = append(attrs, Bool("podchron.termination.stuck", true))
	}
	if p.rootFolded > 0 {
		attrs = append(attrs, Int("podchron.events.folded", int64(p.rootFolded)))
	}
	c.emit(p, Span{SpanID: c.rootID(p), Name: "pod", Start: start, End: at, Status: status, StatusMessage: msg,
		Attrs: attrs, Events: p.rootEvents})
	if p.stuck {
		c.cfg.Observer.StuckTerminating(p.namespace(), false)
	}
	delete(c.pods, p.uid)
	c.gone[p.uid] = p
	if p.sandboxID != "" {
		delete(c.bySandbox, p.sandboxID)
	}
	for _, ct := range p.containers {
		delete(c.containers, ct.id)
		for pid := range ct.pids {
			delete(c.procs, pid)
		}
		ct.pids = nil
	}
	for id, ref := range c.cgroups {
		if ref.ident.PodUID == p.uid {
			delete(c.cgroups, id)
		}
	}
}

func (c *Correlator) terminationSpan(p *pod, at time.Time, unfinished string) {
	attrs := []Attr{String("podchron.owner.kind", p.ownerKind())}
	if !p.deletedAt.IsZero() {
		attrs = append(attrs, Float("podchron.grace_period.seconds", p.grace.Seconds()))
	}
	if p.forced {
		attrs = append(attrs, Bool("podchron.termination.forced", true))
	}
	if reason, m, ok := p.disruption(); ok {
		attrs = append(attrs, String("podchron.termination.reason", reason))
		if m != "" {
			attrs = append(attrs, String("message", m))
		}
	} else if p.terminationReason != "" {
		attrs = append(attrs, String("podchron.termination.reason", p.terminationReason))
	} else if p.info != nil && p.info.Reason != "" {
		attrs = append(attrs, String("podchron.termination.reason", p.info.Reason))
	}
	attrs = append(attrs, Bool("podchron.grace_period.overrun", p.overrun))
	status, msg := StatusOK, ""
	if p.overrun {
		status, msg = StatusError, "grace period overrun: a container was killed with SIGKILL"
	}
	if p.stuck {
		attrs = append(attrs, Bool("podchron.termination.stuck", true))
		status, msg = StatusError, fmt.Sprintf("stuck terminating: gone %.1fs after the deadline", at.Sub(p.deadline).Seconds())
	}
	if unfinished != "" {
		status, msg = StatusUnset, "still terminating: "+unfinished
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
		c.emit(p, Span{SpanID: p.spanID("cleanup"), Parent: c.terminationID(p), Name: "pod.cleanup", Start: lastExit, End: at, Status: StatusOK,
			Attrs: []Attr{Int("podchron.cni.del_runs", int64(len(p.cniDel)))}})
	}
	d := at.Sub(p.terminating)
	if unfinished == "" {
		c.cfg.Observer.PodTermination(p.namespace(), p.ownerKind(), d, p.overrun)
	}
	c.emit(p, Span{SpanID: c.terminationID(p), Parent: c.rootID(p), Name: "pod.termination", Start: p.terminating, End: at,
		Status: status, StatusMessage: msg, Attrs: attrs})
}

// tick runs timers: settling finished containers and start-ups, stuck
// terminations.
func (c *Correlator) tick() {
	c.settleAll()
	for _, uid := range sortedKeys(c.pods) {
		if p := c.pods[uid]; !p.startupDone && !p.startupSettle.IsZero() {
			c.maybeStarted(p)
		}
	}
	c.giveUpStartups()
	for _, uid := range sortedKeys(c.pods) {
		if p := c.pods[uid]; len(p.resandboxes) > 0 {
			c.emitResandboxes(p, false)
		}
	}
	c.expireEvents()
	for _, uid := range sortedKeys(c.pods) {
		p := c.pods[uid]
		if p.apiGoneAt.IsZero() || p.finished {
			continue
		}
		if left := c.lingering(p); left == "" {
			// Gone with its last container, once the runtime had time
			// to say why it ended.
			at := p.apiGoneAt
			for _, ct := range p.containers {
				if !ct.sandbox && ct.exited {
					at = latest(at, ct.exitAt)
				}
			}
			if c.now.Sub(at) >= settle {
				c.finishPod(p, at, "")
			}
		} else if c.now.Sub(p.apiGoneAt) > lingerLimit {
			c.finishPod(p, c.now, "containers "+left+" still running "+lingerLimit.String()+" after the pod object was deleted")
		}
	}
	for uid, p := range c.gone {
		if c.now.Sub(p.goneAt) > goneRetention {
			delete(c.gone, uid)
		}
	}
	for _, p := range c.pods {
		if p.stuck || p.deadline.IsZero() || p.finished {
			continue
		}
		if c.now.Sub(p.deadline) > c.cfg.StuckAfter {
			p.stuck = true
			p.addRootEvent(SpanEvent{Name: "podchron.stuck_terminating", Time: c.now,
				Attrs: []Attr{Float("podchron.past_deadline.seconds", c.now.Sub(p.deadline).Seconds())}})
			c.cfg.Observer.StuckTerminating(p.namespace(), true)
		}
	}
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
	attrs := append(containerAttrs(ct), Float("podchron.backoff.seconds", wait.Seconds()))
	if ev := p.recentEvent("BackOff", ct.name, prev.exitAt, start); ev != nil {
		attrs = append(attrs, String("message", ev.Message))
	}
	c.emit(p, Span{SpanID: p.spanID(ctKey("backoff", ct)), Parent: c.rootID(p), Name: "container.backoff",
		Start: prev.exitAt, End: start, Status: StatusOK, Attrs: attrs})
}
