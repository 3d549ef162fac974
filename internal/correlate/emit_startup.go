// Spans of a pod's start-up: pod.startup and its children (sandbox, CNI,
// image pulls, init containers, container starts).

package correlate

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/names"
)

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
		c.emit(p, span.Span{SpanID: p.spanID("scheduling"), Parent: id, Name: names.SpanPodScheduling, Start: p.info.CreatedAt, End: sched, Status: span.StatusOK})
	}
	// The sandbox and its network.
	if !p.sandboxCreated.IsZero() {
		sbID := p.spanID("sandbox")
		end := p.sandboxEnd()
		var sattrs []span.Attr
		if p.sandboxID != "" {
			sattrs = append(sattrs, span.String(names.ContainerID, p.sandboxID))
		}
		for _, r := range p.cniAdd {
			if r.done {
				c.emit(p, c.cniSpan(p, r, sbID))
			}
		}
		c.emit(p, span.Span{SpanID: sbID, Parent: id, Name: names.SpanPodSandbox, Start: p.sandboxCreated, End: end, Status: span.StatusOK, Attrs: sattrs})
	}
	// Image pulls.
	for _, name := range slices.Sorted(maps.Keys(p.pulls)) {
		pl := p.pulls[name]
		if pl.start.IsZero() || pl.end.IsZero() && pl.failedAt.IsZero() {
			continue
		}
		c.emit(p, c.pullSpan(p, pl, id))
	}
	// Each app container's start: created -> its init process runs.
	for _, ct := range p.containers {
		if ct.notApp() {
			continue
		}
		if ct.name == "" {
			// No source named it (the API's statuses name every app
			// container): the sandbox's pause container before the
			// runtime or a CNI run said so, not an app's start.
			c.miss(names.MissStartUnnamedContainer)
			continue
		}
		s, e := ct.startTimes()
		if !s.IsZero() && e.IsZero() && !p.apiStarted(ct.id) {
			// Created and not started by the start-up's end (the
			// kubelet's next attempt of a restarted container when the
			// pod is deleted): no start within the start-up, and
			// nothing is missing.
			continue
		}
		if s.IsZero() || e.IsZero() {
			// Named but neither the runtime nor the kernel said when it
			// was created or started by the start-up's end.
			c.missOn(p, names.MissStartWithoutTimes, ct.name)
			continue
		}
		attrs := containerAttrs(ct)
		if len(ct.initArgs) > 0 {
			attrs = append(attrs, span.Strings(names.ProcessCommandArgs, ct.initArgs...), span.Int(names.ProcessPID, int64(ct.initPID)))
		}
		c.emit(p, span.Span{SpanID: p.spanID(ctKey("start", ct)), Parent: id, Name: names.SpanContainerStart, Start: s, End: e, Status: span.StatusOK, Attrs: attrs})
	}
	c.startupSpan(p, id, start, ready, out)
}

// sandboxEnd is the end of the pod's first sandbox: its CNI ADDs' end, or
// its pause process's exec when later, but no later than the kubelet's
// next step, the creation of the pod's first container. runc's start
// returns once it has told runc init to exec, not after the exec, so the
// kubelet can have RunPodSandbox's answer and create a container before the
// pause process runs (seen under load: its exec 93 ms after the init
// container's creation).
func (p *pod) sandboxEnd() time.Time {
	end := latest(p.sandboxCreated, p.sandboxReady)
	var pause, next time.Time
	for _, ct := range p.containers {
		if ct.sandbox {
			pause = latest(pause, ct.initExec)
		} else {
			next = earliest(next, ct.createdAt, ct.cgroupAt)
		}
	}
	if !next.IsZero() && pause.After(next) {
		pause = next
	}
	return latest(end, pause)
}

// startTimes is an app container's container.start: from its creation
// (the runtime's, or its cgroup's) to its init process running (the
// runtime's start, or the kernel's exec); zero when a source has not said.
func (ct *container) startTimes() (s, e time.Time) {
	return earliest(ct.createdAt, ct.cgroupAt), latest(ct.startedAt, ct.initExec)
}

// undatedRunning reports whether an app container p's API status shows
// running has no start times yet.
func (c *Correlator) undatedRunning(p *pod) bool {
	if p.info == nil {
		return false
	}
	for _, st := range p.info.Statuses {
		if st.State.Running == nil || st.ContainerID == "" || p.ephemeral(st.Name) {
			continue
		}
		if ct, ok := c.containers[st.ContainerID]; ok && ct.pod == p {
			if s, e := ct.startTimes(); s.IsZero() || e.IsZero() {
				return true
			}
		}
	}
	return false
}

// startupSpan emits pod.startup itself, with its verdict and long pole, and
// measures a successful one.
func (c *Correlator) startupSpan(p *pod, id span.SpanID, start, ready time.Time, out startupOutcome) {
	phases := p.startupPhaseTimes(ready, out.failure != "")
	pole, hasPole := longPole(phases)
	p.verdict.longPole, p.verdict.hasPole = pole, hasPole
	p.verdict.startupVerdict = p.startupVerdict(ready.Sub(start), out, pole, hasPole)
	attrs := []span.Attr{span.String(names.OwnerKind, p.ownerKind()), span.String(names.Verdict, p.verdict.startupVerdict)}
	attrs = append(attrs, poleAttrs(pole, hasPole)...)
	status, msg := span.StatusOK, ""
	if out.failure != "" {
		status, msg = span.StatusError, out.failure
		attrs = append(attrs, span.String(names.StartupOutcome, out.outcome))
		if out.container != "" {
			attrs = append(attrs, span.String(names.K8sContainerName, out.container))
		}
		if out.reason != "" {
			attrs = append(attrs, span.String(names.WaitingReason, out.reason))
		}
	} else {
		if out.outcome != "" {
			attrs = append(attrs, span.String(names.StartupOutcome, out.outcome))
		}
		c.observer(p).PodStartup(p.namespace(), p.ownerKind(), pole.name, ready.Sub(start), p.trace.String())
		c.startupPhases(p, phases)
	}
	c.emit(p, span.Span{SpanID: id, Parent: c.rootID(p), Name: names.SpanPodStartup, Start: start, End: ready, Status: status,
		StatusMessage: msg, Attrs: attrs, Events: p.gateWait()})
}

func (c *Correlator) cniSpan(p *pod, r *cniRun, parent span.SpanID) span.Span {
	attrs := []span.Attr{span.String(names.CNIPlugin, r.plugin), span.String(names.CNICommand, r.command),
		span.String(names.ContainerID, r.containerID), span.Int(names.ProcessPID, int64(r.pid))}
	if r.ifname != "" {
		attrs = append(attrs, span.String(names.CNIIfName, r.ifname))
	}
	if r.netns != "" {
		attrs = append(attrs, span.String(names.CNINetNS, r.netns))
	}
	status := span.StatusOK
	if r.signal != 0 {
		attrs = append(attrs, span.String(names.SignalName, kernel.SignalName(r.signal)))
		status = span.StatusError
	} else {
		attrs = append(attrs, span.Int(names.ProcessExitCode, int64(r.exitCode)))
		if r.exitCode != 0 {
			status = span.StatusError
		}
	}
	key := fmt.Sprintf("cni/%s/%s/%d@%d", r.command, r.plugin, r.pid, r.start.UnixNano())
	return span.Span{SpanID: p.spanID(key), Parent: parent, Name: names.SpanCNIPrefix + r.command + " " + r.plugin,
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

// pullSpan is an image pull: Pulling to Pulled, or to its last failure.
func (c *Correlator) pullSpan(p *pod, pl *pull, parent span.SpanID) span.Span {
	name, key := names.SpanContainerImagePull, "pull/"+pl.container
	attrs := []span.Attr{span.String(names.K8sContainerName, pl.container)}
	attrs = append(attrs, imageAttrs(p.image(pl.container))...)
	if pl.volume != "" {
		name, key = names.SpanPodImageVolumePull, "pull/"+volumePullKey+pl.volume
		attrs = append([]span.Attr{span.String(names.K8sVolumeName, pl.volume)}, imageAttrs(pl.image)...)
	}
	end, status, msg := pl.end, span.StatusOK, ""
	if !pl.end.IsZero() {
		attrs = append(attrs, span.String(names.Message, pl.message))
	} else {
		end, status, msg = pl.failedAt, span.StatusError, pl.failure
		if pl.reason != "" {
			attrs = append(attrs, span.String(names.WaitingReason, pl.reason))
			msg = pl.reason + ": " + pl.failure
		}
	}
	// The kubelet's Events carry whole seconds: a pull that took no time
	// ("already present") can be stamped before the pod's first fact.
	start := pl.start
	if first := p.startupStart(); start.Before(first) {
		start = first
	}
	if end.Before(start) {
		end = start
	}
	return span.Span{SpanID: p.spanID(key), Parent: parent, Name: name, Start: start, End: end,
		Status: status, StatusMessage: msg, Attrs: attrs}
}

// startupPhases measures where a successful start-up's time went, by phase.
func (c *Correlator) startupPhases(p *pod, phases []phaseTime) {
	obs, ns, trace := c.observer(p), p.namespace(), p.trace.String()
	for _, ph := range phases {
		obs.PodStartupPhase(ns, ph.name, ph.d, trace)
	}
}

// startupPhaseTimes is where a start-up's time went, by phase
// (names.Phase*): scheduling, the sandbox (with its network; as long as its
// span, sandboxEnd), each image pull, the init containers (first start to
// last exit), each app container's start, and the wait for Ready after the
// last app container ran. failed: the start-up never got Ready; a failed
// pull counts to its last failure.
func (p *pod) startupPhaseTimes(ready time.Time, failed bool) []phaseTime {
	var out []phaseTime
	phase := func(name string, from, to time.Time) {
		if !from.IsZero() && !to.IsZero() {
			out = append(out, phaseTime{name: name, d: to.Sub(from)})
		}
	}
	if sched, ok := p.condition("PodScheduled"); ok && p.info != nil {
		phase(names.PhaseScheduling, p.info.CreatedAt, sched)
	}
	if !p.sandboxCreated.IsZero() {
		phase(names.PhaseSandbox, p.sandboxCreated, p.sandboxEnd())
	}
	for _, name := range slices.Sorted(maps.Keys(p.pulls)) {
		if pl := p.pulls[name]; !pl.end.IsZero() {
			phase(names.PhaseImagePull, pl.start, pl.end)
		} else if failed && !pl.failedAt.IsZero() {
			phase(names.PhaseImagePull, pl.start, pl.failedAt)
		}
	}
	var initFrom, initTo, lastRun time.Time
	for _, ct := range p.containers {
		switch {
		case ct.sandbox, p.ephemeral(ct.name):
		case ct.init:
			initFrom = earliest(initFrom, ct.startedAtOr())
			if ct.exited {
				initTo = latest(initTo, ct.exitAt)
			}
		default:
			s, e := ct.startTimes()
			phase(names.PhaseStart, s, e)
			lastRun = latest(lastRun, e)
		}
	}
	phase(names.PhaseInit, initFrom, initTo)
	phase(names.PhaseReadiness, lastRun, ready)
	return out
}
