// The container runtime's facts in (CRI): sandboxes and containers created,
// started, exited and removed, with their IDs, PIDs and reasons. The handler
// only updates the model and notes changes for the lifecycle step.

package correlate

import (
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

func (c *Correlator) runtime(ev *cri.Event) {
	switch {
	case ev.Type == cri.EventRuntimeUnavailable || ev.Type == cri.EventRuntimeAvailable:
		c.runtimeAvailability(ev)
	case ev.Sandbox != nil && ev.Container == nil:
		c.runtimeSandbox(ev, ev.Sandbox)
	case ev.Container != nil:
		c.runtimeContainer(ev, ev.Container)
	}
}

// runtimeAvailability: the runtime went away or came back; a gap it came
// back from is noted on every pod that lived through it.
func (c *Correlator) runtimeAvailability(ev *cri.Event) {
	if ev.Type == cri.EventRuntimeUnavailable {
		c.runtimeGap = ev.Gap
		var since = ev.At
		if ev.Gap != nil {
			since = ev.Gap.Since
		}
		c.sourceDown(fact.SourceRuntime, "runtime unavailable", since)
		return
	}
	c.runtimeGap = nil
	until := ev.At
	if ev.Gap != nil {
		until = ev.Gap.Until
		for _, p := range c.pods {
			if !p.firstSeen.After(until) {
				p.addRootEvent(span.SpanEvent{Name: names.EventRuntimeGap, Time: ev.Gap.Since,
					Attrs: []span.Attr{span.String(names.GapUntil, until.UTC().Format("2006-01-02T15:04:05.000Z07:00"))}})
			}
		}
	}
	c.sourceUp(fact.SourceRuntime, until)
}

// runtimeSandbox: a pod sandbox created, stopped or removed.
func (c *Correlator) runtimeSandbox(ev *cri.Event, sb *cri.Sandbox) {
	if sb.PodUID == "" {
		c.miss(names.MissSandboxWithoutPodUID)
		return
	}
	if ev.Type == cri.EventSandboxRemoved {
		c.endedSandboxRemoved(sb.PodUID)
	}
	p := c.pod(sb.PodUID, ev.At, names.MissRuntimeAfterTraceEnd)
	if p == nil {
		return
	}
	switch ev.Type {
	case cri.EventSandboxCreated:
		created := sb.CreatedAt
		if created.IsZero() {
			created = ev.At
		}
		if p.sandboxID != "" && p.sandboxID != sb.ID || p.sandboxID == "" && p.resumed && created.After(c.started) {
			// Another sandbox, or the first one seen of a pod resumed
			// (a node reboot's): a recreated sandbox.
			c.sandboxChanged(p, sb.ID, created)
		}
		p.sandboxID = sb.ID
		c.bySandbox[sb.ID] = p
		if !sb.CreatedAt.IsZero() && (p.sandboxCreated.IsZero() || sb.CreatedAt.Before(p.sandboxCreated)) {
			p.sandboxCreated = sb.CreatedAt
		}
		ct := c.container(sb.ID, p)
		ct.sandbox = true
		ct.name = "POD"
		ct.podName, ct.podNamespace = sb.PodName, sb.PodNamespace
		c.podSeen(p)
	case cri.EventSandboxStopped:
		if sb.ID == p.sandboxID {
			p.sandboxStopped = ev.At
		}
	case cri.EventSandboxRemoved:
		if sb.ID == p.sandboxID {
			p.sandboxRemoved = ev.At
			c.note(change{kind: changePodGoing, p: p, at: ev.At})
		}
	}
}

// runtimeContainer: a container created, started, exited or removed.
func (c *Correlator) runtimeContainer(ev *cri.Event, rc *cri.Container) {
	var p *pod
	if rc.PodUID != "" {
		if p = c.pod(rc.PodUID, ev.At, names.MissRuntimeAfterTraceEnd); p == nil {
			return
		}
	} else if sp, ok := c.bySandbox[rc.SandboxID]; ok {
		p = sp
	}
	if p == nil {
		c.miss(names.MissContainerWithoutPod)
		return
	}
	if p.retired(rc.ID) {
		c.missOn(p, names.MissFactAfterAttemptRetire, rc.Name)
		return
	}
	ct := c.container(rc.ID, p)
	c.runtimeDescribe(p, ct, rc)
	if ev.Type != cri.EventContainerExited && ev.Type != cri.EventContainerRemoved {
		c.runtimeIdentity(ct, rc.PID, rc.Args)
	}
	switch ev.Type {
	case cri.EventContainerCreated:
		if ct.createdAt.IsZero() {
			ct.createdAt = rc.CreatedAt
		}
	case cri.EventContainerStarted:
		ct.startedAt = rc.StartedAt
		c.note(change{kind: changeContainerStarted, ct: ct})
	case cri.EventContainerExited:
		if c.endedBeforeStart(ev, ct, rc) {
			return
		}
		c.runtimeExited(ct, rc)
	case cri.EventContainerRemoved:
		ct.removed = true
		if !ct.exited && !ct.startedAtOr().IsZero() {
			// Neither the kernel nor a runtime poll saw it exit before it was
			// removed: close the run, saying the cause is unknown.
			ct.exited = true
			ct.exitAt = ev.At
			ct.unknownExit = true
			ct.runtimeExit = true
			c.note(change{kind: changeContainerExited, ct: ct})
		}
	}
}

// runtimeDescribe takes what the runtime says a container is: its attempt,
// image and runtime, and, the first time, its name, pod and memory limit.
func (c *Correlator) runtimeDescribe(p *pod, ct *container, rc *cri.Container) {
	if rc.Attempt > ct.attempt {
		ct.attempt = rc.Attempt
	}
	if rc.Image != "" {
		ct.image = rc.Image
	}
	if rc.Runtime.Name != "" {
		ct.runtime = rc.Runtime
	}
	if ct.name != "" {
		return
	}
	ct.name = rc.Name
	ct.podName, ct.podNamespace = rc.PodName, rc.PodNamespace
	c.podSeen(p)
	ct.memLimit = rc.MemoryLimitBytes
	if _, isInit := p.spec(rc.Name); isInit {
		if spec, _ := p.spec(rc.Name); spec != nil && !spec.Sidecar {
			ct.init = true
		}
	}
}

// runtimeExited: the runtime's word on a container's exit.
func (c *Correlator) runtimeExited(ct *container, rc *cri.Container) {
	ct.reason = rc.Reason
	ct.runtimeExit = true
	c.misreportedOOM(ct) // a reason after the run's span
	if !ct.exited {
		// The kernel did not show the init's exit (lost, or started
		// before the tracer): the runtime's facts close the run.
		ct.exited = true
		ct.exitAt = rc.FinishedAt
		ct.exitCode = int(rc.ExitCode)
		if rc.ExitCode > 128 && rc.ExitCode < 128+65 {
			ct.exitSignal = sigNum(int(rc.ExitCode) - 128)
		}
		c.note(change{kind: changeContainerExited, ct: ct})
	}
	c.note(change{kind: changeRuntimeExit, ct: ct})
}

// endedBeforeStart: the runtime's first poll shows a container that had
// already ended when this tracer instance started. Its end was the
// previous instance's to report (it emits, at its shutdown, every end the
// runtime confirmed to it); told again here, with less of the kernel's
// facts, the same span IDs would leave with different content. The
// container is known (its name, its pod) but its spans are not emitted. An
// end the previous instance did not see confirmed (the runtime's poll came
// after it stopped) is then not reported by either: counted as a miss.
func (c *Correlator) endedBeforeStart(ev *cri.Event, ct *container, rc *cri.Container) bool {
	if ev.Phase != cri.PhaseInitial || c.started.IsZero() || ct.finalized ||
		rc.FinishedAt.IsZero() || !rc.FinishedAt.Before(c.started) {
		return false
	}
	if c.untoldEnd(ct, rc.FinishedAt) {
		return false // nobody told it: this instance does
	}
	ct.reason, ct.runtimeExit = rc.Reason, true
	ct.exited, ct.finalized = true, true
	ct.exitAt, ct.exitCode = rc.FinishedAt, int(rc.ExitCode)
	c.miss(names.MissContainerEndedBefore)
	return true
}
