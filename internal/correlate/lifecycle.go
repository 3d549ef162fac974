package correlate

import (
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// The lifecycle step. The ingest handlers (ingest_kernel.go,
// ingest_runtime.go, ingest_api.go) only record facts; when a fact may end
// or begin a phase they note a change. After each input, step takes the
// changes in the order they were noted and decides here, in one place, what
// each one ends: which span is emitted, when, and what waits for more facts.
// Timers (timers.go) make the same decisions when waiting is over.

// changeKind is a fact change that may end a phase.
type changeKind uint8

const (
	// changeInitFound: a container's init process is known (it ran its
	// command, or the runtime named it). Its back-off wait ended, and the
	// pod's start-up may have.
	changeInitFound changeKind = iota + 1
	// changeContainerStarted: the runtime reports the container started.
	changeContainerStarted
	// changeContainerExited: the container's init exited (the kernel's
	// exit, or the runtime's word when the kernel's was not seen).
	changeContainerExited
	// changeRuntimeExit: the runtime reported the exit and its reason.
	changeRuntimeExit
	// changeSessionExited: an exec session (hook, probe, kubectl exec)
	// ended.
	changeSessionExited
	// changeCNIDone: a CNI plugin call returned.
	changeCNIDone
	// changePodUpdated: the API's view of the pod changed.
	changePodUpdated
	// changePodGoing: something the pod's end waits for happened (the API
	// object deleted, the sandbox or the pod's cgroup removed) at at.
	changePodGoing
)

type change struct {
	kind changeKind
	p    *pod
	ct   *container
	r    *cniRun
	at   time.Time
}

// podEnd: the pod going away and its trace ending.
type podEnd struct {
	cgroupSeen    bool      // the pod's cgroup directory was made, or found by the scan
	cgroupRemoved time.Time // the pod cgroup's removal
	goneAt        time.Time
	apiGoneAt     time.Time // the object was deleted while containers still ran
	finished      bool
	finishing     bool
}

// containerEnd: a container's exit, as the kernel or the runtime saw it,
// and its settling.
type containerEnd struct {
	exited      bool
	exitAt      time.Time
	exitCode    int
	exitSignal  syscall.Signal
	reason      string // runtime's reason (OOMKilled, Error, Completed)
	unknownExit bool
	runtimeExit bool
	removed     bool
	settleBy    time.Time
	// finalized: the exited run settled and its spans are decided; its
	// init no longer changes.
	finalized   bool
	backoffDone bool
}

// note records a change for the next step.
func (c *Correlator) note(ch change) { c.changes = append(c.changes, ch) }

// step decides what the noted changes end, in order.
func (c *Correlator) step() {
	for i := 0; i < len(c.changes); i++ {
		c.decide(c.changes[i])
	}
	clear(c.changes)
	c.changes = c.changes[:0]
}

func (c *Correlator) decide(ch change) {
	switch ch.kind {
	case changeInitFound, changeContainerStarted:
		if ch.ct.pod != nil {
			// A new attempt: the kubelet's stop of the last one was a
			// restart (its spans may wait for this).
			c.settlePod(ch.ct.pod, false)
		}
		c.backoff(ch.ct)
		if ch.ct.pod != nil {
			c.maybeStarted(ch.ct.pod)
			c.maybeRestartedAll(ch.ct.pod)
			c.retireAttempts(ch.ct.pod)
		}
	case changeContainerExited:
		c.containerExited(ch.ct)
	case changeRuntimeExit:
		if ch.ct.pod != nil && ch.ct.exited {
			c.noteRestartAll(ch.ct)
		}
		c.settleContainer(ch.ct, false)
	case changeSessionExited:
		c.settleContainer(ch.ct, true)
	case changeCNIDone:
		// A DEL is the pod's ending, under its termination. ADDs are the
		// start-up's or a recreated sandbox's, emitted with those. A run
		// after the trace ended never gets here (cniDone counts it).
		if ch.r.command == "DEL" {
			c.emit(ch.p, c.cniSpan(ch.p, ch.r, c.terminationParent(ch.p)))
		}
	case changePodUpdated:
		c.settlePod(ch.p, false) // a stop may wait for the pod's status
		c.kubeletPostStarts(ch.p)
		c.maybeStarted(ch.p)
		c.restartAllCondition(ch.p)
		c.resizeChanged(ch.p)
		c.maybeRestartedAll(ch.p)
		c.readinessChanged(ch.p)
	case changePodGoing:
		c.maybeGone(ch.p, ch.at)
	}
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
	c.noteRestartAll(ct)
	c.settleContainer(ct, false)
}

// confirmed: the runtime has named the container and reported its end,
// or removed it: after a removal the runtime says no more of it (its poll
// had not seen it exit: no reason will come), so the kernel's exit is the
// end the runtime leaves, and the next tracer instance, whose runtime
// snapshot no longer has the container, cannot report it.
func (ct *container) confirmed() bool {
	return ct.name != "" && (ct.reason != "" || ct.runtimeExit || ct.removed)
}

// settleContainer emits a finished container's spans once the runtime has
// named it and given its reason, or once the settle time passed (or force).
func (c *Correlator) settleContainer(ct *container, force bool) {
	if !force && !ct.confirmed() && c.now.Before(ct.settleBy) {
		return
	}
	for _, sd := range ct.doneSessions {
		c.sessionSpan(ct, sd.s, sd.e)
	}
	ct.doneSessions = nil
	if ct.exited && !ct.finalized {
		if !force && c.verdictPending(ct) {
			return
		}
		ct.finalized = true
		if !ct.sandbox {
			c.containerDone(ct)
		}
	}
}

// containerDone decides the spans a container's end closes: its run (or
// init run), and its stop when it was stopped (by the pod's termination, or
// by the runtime's signal: a liveness or startup probe restart, a kubelet
// stop). The pod's start-up may end with it (an init container).
func (c *Correlator) containerDone(ct *container) {
	c.runSpan(ct)
	c.misreportedOOM(ct)
	if stop := ct.stopSignal(); !ct.pod.terminating.IsZero() || stop != nil && stop.senderKind == names.SenderRuntime {
		c.stopSpan(ct)
	}
	c.maybeStarted(ct.pod)
}

// settleAll settles what is due.
func (c *Correlator) settleAll() {
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
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

// settleAtShutdown emits what a pod's containers have ended that the
// next tracer instance cannot see again: finished exec sessions, and the
// containers whose end the runtime confirmed. A container whose end only
// the kernel saw waits for the runtime's word, which the next instance
// gets (its first poll), so it is left to that instance: deciding it now,
// without the runtime's exit reason, would emit its spans with content
// the next instance contradicts.
func (c *Correlator) settleAtShutdown(p *pod) {
	for _, ct := range p.containers {
		for _, sd := range ct.doneSessions {
			c.sessionSpan(ct, sd.s, sd.e)
		}
		ct.doneSessions = nil
		if ct.exited && !ct.finalized && ct.confirmed() {
			c.settleContainer(ct, true)
		}
	}
}

// maybeStarted emits the startup phase once the pod is ready.
func (c *Correlator) maybeStarted(p *pod) {
	if p.startupDone {
		if t, ok := p.condition("Ready"); ok && !p.gaveUpAt.IsZero() && !p.lateReady {
			// Ready after the model gave up on the start-up: say when.
			p.lateReady = true
			p.addRootEvent(span.SpanEvent{Name: names.EventReadyAfterStartupGaveUp, Time: t,
				Attrs: []span.Attr{span.Float(names.StartupSeconds, t.Sub(p.startupStart()).Seconds())}})
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
		if c.readySettling(p) {
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

// readySettling reports whether a start-up whose Ready was seen waits a
// little longer for facts from before Ready (and when it is due).
func (c *Correlator) readySettling(p *pod) bool {
	due := p.readySeen.Add(settle)
	if !c.now.Before(due) || p.finishing {
		return false
	}
	switch {
	case !c.seq.waited(slotKernel):
		// The kernel's view of what made the pod ready can trail the
		// API server's by the ring buffer's poll; with the kernel's
		// progress waited for, every kernel fact from before Ready was
		// seen has been handled already.
	case c.seq.waited(slotRuntime) && c.undatedRunning(p):
		// A container the API shows running that neither the kernel
		// nor the runtime has dated yet: the kernel's records of it can
		// be lost (counted), and the runtime's poll that first lists it
		// is keyed by its snapshot time, which can come after the Ready
		// it led to. The window on the model's clock ends only once the
		// runtime's progress has passed it, so a poll within it is
		// handled first.
	default:
		return false
	}
	p.startupSettle = due
	return true
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
			p.addRootEvent(span.SpanEvent{Name: names.EventAPIObjectDeleted, Time: at,
				Attrs: []span.Attr{span.String(names.LingeringContainers, c.lingering(p))}})
			if c.cfg.WantEvents != nil {
				// The trace stays open: what the kubelet writes while it
				// stops the containers (Killing) is still the pod's story.
				c.cfg.WantEvents(p.uid)
			}
		}
	case p.info == nil || (c.apiKnown && !c.apiUp):
		gone = !p.sandboxRemoved.IsZero() || !p.cgroupRemoved.IsZero()
		if gone {
			// No status can say why (the API server is away).
			p.beganAtStop()
		}
	case !p.cgroupRemoved.IsZero() && p.info.DeletionTimestamp == nil:
		// Done on this node, whatever the API still holds (a Job's pod
		// kept for its logs, an evicted pod, a static pod). A pod being
		// deleted waits for its object instead: a finalizer can keep it
		// Terminating, and that is reported (stuck).
		gone = c.statusCaughtUp(p)
	}
	if !gone {
		return
	}
	c.finishPod(p, at, "")
}

// statusWait bounds how long a pod whose cgroup is gone, with no deletion,
// waits for the API to say it ended: the kubelet writes the terminal phase
// and its reason (DeadlineExceeded, Evicted) through its status manager,
// asynchronously, and a watch can deliver it after the kubelet stopped the
// containers and removed the pod's cgroup (CI's 1.37 leg, 2026-12-06).
// The kubelet retries its status every 10 s.
const statusWait = 15 * time.Second

// statusCaughtUp: a pod done on the node (its cgroup gone, no deletion)
// has the API status that tells its end, or need not wait for one: a
// static pod (its end is its manifest's), a terminal phase, or statusWait
// passed. Then, with no reason told, the runtime's stop of a last run is
// still where its termination began.
func (c *Correlator) statusCaughtUp(p *pod) bool {
	if p.info.Static || p.info.Phase == "Succeeded" || p.info.Phase == "Failed" {
		return true
	}
	if c.now.Sub(p.cgroupRemoved) < statusWait {
		return false
	}
	p.beganAtStop()
	return true
}

// beganAtStop: a pod that ended on the node with no termination told (no
// deletion, no status that says why) began to end at the runtime's first
// stop of one of its containers' last runs, if one came.
func (p *pod) beganAtStop() {
	if p.terminating.IsZero() {
		p.terminating = p.firstStop()
	}
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

// finishPod emits the termination phase and the root span, and forgets the pod.
func (c *Correlator) finishPod(p *pod, at time.Time, unfinished string) {
	if p.finished {
		return
	}
	if c.unconfirmed(p) {
		// Not told: its end was the previous instance's (resume.go).
		c.miss(names.MissPodUnconfirmed)
		p.finished = true
		c.forget(p)
		return
	}
	p.finishing = true
	if !p.startupDone && !p.readySeen.IsZero() {
		c.maybeStarted(p) // a start-up still settling
	}
	if !p.startupDone && !c.endStartupByPhase(p, true) {
		c.endStartupUnready(p, at, names.StartupGone, "gone before Ready")
	}
	c.settlePod(p, true)
	c.emitResandboxes(p, true)
	p.finished = true
	p.goneAt = at
	// Containers still running (no exit seen): close them as unfinished.
	for _, ct := range p.containers {
		if !ct.sandbox && !ct.exited && !ct.startedAtOr().IsZero() && unfinished != "" {
			c.emit(p, span.Span{SpanID: p.spanID(ctKey(names.SpanContainerRun, ct)), Parent: c.rootID(p), Name: names.SpanContainerRun,
				Start: ct.startedAtOr(), End: at, Status: span.StatusUnset, StatusMessage: "still running: " + unfinished, Attrs: containerAttrs(ct)})
		}
	}
	c.notReadyAtEnd(p, at, unfinished != tracerStopped)
	if !p.restartAllAt.IsZero() {
		c.restartAllSpan(p, at, "the pod ended during its in-place restart")
	}
	if !p.terminating.IsZero() {
		c.terminationSpan(p, at, unfinished)
	}
	c.rootSpan(p, at, unfinished)
	if p.stuck {
		c.observer(p).StuckTerminating(p.namespace(), c.podRef(p), false)
	}
	c.forget(p)
}
