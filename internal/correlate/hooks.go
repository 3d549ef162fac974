// Lifecycle hooks the kubelet runs itself (sleep, httpGet): nothing in the
// container for the kernel to see, so their spans are bounded by the facts
// around them. A preStop hook runs from the pod's deletion to the runtime's
// stop signal; a postStart hook from the container's start to the API
// status that shows it running. The grace period a preStop hook leaves to
// the app, the kubelet's 2 s minimum when it left less, and a kubelet that
// restarted mid-termination and ran preStop again are decided here.

package correlate

import (
	"fmt"
	"syscall"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// Handler kinds of the pod spec (as internal/watcher names them).
const (
	handlerExec    = "exec"
	handlerSleep   = "sleep"
	handlerHTTPGet = "httpGet"
)

// minimumGrace is the kubelet's minimumGracePeriodInSeconds: what it still
// gives a container between its stop signal and SIGKILL when no grace is
// left (a preStop hook used the grace period, an eviction's grace 0).
const minimumGrace = 2 * time.Second

// rerunSlack: how much later than its hook allows a stop signal may come
// before it tells a kubelet that ran the hook again (the kubelet's own lag
// between seeing the deletion and running the hook is milliseconds; a
// restart takes seconds).
const rerunSlack = 2 * time.Second

// hookTolerance: how much sooner than the grace period's end a stop signal
// may come and still tell a hook that outlasted it (the deletion is when
// the tracer saw it, which can trail the kubelet's sighting).
const hookTolerance = 500 * time.Millisecond

// killSlack: how much later than the kubelet's 2 s minimum its SIGKILL may
// come (the runtime's timer, a loaded node).
const killSlack = time.Second

// maxPreStopRuns caps the exec preStop runs kept per container run.
const maxPreStopRuns = 4

// containerHooks: a container's exec preStop runs begun after its pod's
// termination started (a second one is a kubelet that restarted), and
// whether its kubelet-run postStart span is out.
type containerHooks struct {
	preStopRuns   []time.Time
	postStartDone bool
}

// podHooks: what the termination says about its hooks: the kubelet's
// reruns of preStop, and a SIGKILL that was the kubelet's 2 s minimum
// after a hook used the grace period (not the app's overrun).
type podHooks struct {
	termEvents []span.SpanEvent
	rerunNoted bool
	// kubeletKillNote: why a SIGKILL was the kubelet's, not the app's
	// overrun; graceUsedByPreStop: a preStop hook used the grace period.
	kubeletKillNote    string
	graceUsedByPreStop bool
}

// notePreStopRun records an exec preStop session's start.
func (ct *container) notePreStopRun(s *session) {
	if s.kind != names.SessionPreStop || ct.pod == nil || ct.pod.terminating.IsZero() || len(ct.preStopRuns) >= maxPreStopRuns {
		return
	}
	ct.preStopRuns = append(ct.preStopRuns, s.start)
}

// graceWindow is the grace period a container's app had after its preStop
// hook, as the facts show it.
type graceWindow struct {
	handler *fact.Handler
	start   time.Time     // the hook's (last) run began: the deletion, or the kubelet's rerun
	stop    time.Time     // the runtime's stop signal: the hook was over
	grace   time.Duration // the grace period the hook and the app shared
	left    time.Duration // what the app had after the hook (at least the kubelet's minimum)
	used    bool          // the hook used the grace period: the app had the kubelet's 2 s minimum
	rerun   bool          // the kubelet restarted and ran the hook again
}

// preStopWindow: the grace window of a container with a preStop hook
// stopped by its pod's deletion, ok false otherwise.
func (c *Correlator) preStopWindow(ct *container, term *signalRec) (graceWindow, bool) {
	p := ct.pod
	if p == nil || p.deletedAt.IsZero() || term == nil || p.grace <= 0 {
		return graceWindow{}, false
	}
	start := p.deletedAt
	if term.at.Before(start) {
		// The deletion was sighted after the stop it caused (its time is
		// the API's whole second, sharpened by when the watch delivered
		// it: the termination began at the stop, ingest_api.go): the hook
		// ran between, too short to be seen. e2e 42 on a loaded CI: the
		// kubelet ran an httpGet hook and stopped the app in 14 ms.
		if start.Sub(term.at) >= deletionUncertainty {
			return graceWindow{}, false
		}
		start = term.at
	}
	spec, _ := p.spec(ct.name)
	if spec == nil || spec.PreStop == nil {
		return graceWindow{}, false
	}
	w := graceWindow{handler: spec.PreStop, start: start, stop: term.at, grace: p.grace}
	switch spec.PreStop.Kind {
	case handlerExec:
		// A second run of the same hook: the restarted kubelet's.
		if n := len(ct.preStopRuns); n > 1 {
			w.start, w.rerun = ct.preStopRuns[n-1], true
		}
	case handlerSleep:
		// The hook sleeps its seconds, cut at the grace period: a stop
		// signal much later is a kubelet that restarted and slept again
		// (from then, for as long as the hook allows). An httpGet hook's
		// length is unknown: its reruns cannot be told.
		// (A recording from before the seconds were kept has none.)
		hook := min(time.Duration(spec.PreStop.SleepSeconds)*time.Second, p.grace)
		if spec.PreStop.SleepSeconds > 0 && term.at.Sub(p.deletedAt) > hook+rerunSlack {
			w.start, w.rerun = term.at.Add(-hook), true
		}
	}
	if w.rerun {
		// The restarted kubelet's own stop signal ends its hook (the old
		// kubelet may have sent one before it went).
		if s := ct.stopSince(w.start); s != nil {
			w.stop = s.at
		}
	}
	// The kubelet gives the app what the hook left, at least its minimum.
	// The hook used the grace period only when it outlasted it: a hook
	// that left 1 s gave the app 2 s, and an app that overran those
	// overran its own share.
	hookTook := w.stop.Sub(w.start)
	w.left = max(w.grace-hookTook, minimumGrace)
	w.used = hookTook >= w.grace-hookTolerance
	return w, true
}

// kubeletKill says why a SIGKILL after the stop signal is not the app's
// overrun ("" when it is): the hook used the grace period and the kubelet
// gave the app its 2 s minimum, or it came within the new grace period of
// a kubelet that restarted mid-termination (past the first one's end:
// that is the restart's time, not the app's overrun of it).
func (w graceWindow) kubeletKill(kill *signalRec) string {
	if kill == nil || w.stop.IsZero() {
		return ""
	}
	after := kill.at.Sub(w.stop)
	switch {
	case w.used && after <= minimumGrace+killSlack:
		return fmt.Sprintf("preStop hook used the grace period (%s); SIGKILL %.1fs after the stop signal: the kubelet's 2 s minimum, not the app's overrun",
			w.grace, after.Seconds())
	case w.rerun && !kill.at.After(latest(w.start.Add(w.grace), w.stop.Add(minimumGrace)).Add(killSlack)):
		// The grace period the app was first given has passed: the kill
		// ends the restarted kubelet's new one.
		return fmt.Sprintf("SIGKILL at the end of the new grace period (%s) of a kubelet that restarted mid-termination and ran preStop again, not an overrun of the first",
			w.grace)
	}
	return ""
}

// stopSince is the runtime's first stop signal (not SIGKILL) to the
// container's init at or after t.
func (ct *container) stopSince(t time.Time) *signalRec {
	for i := range ct.signals {
		s := &ct.signals[i]
		if s.toInit && s.sig != syscall.SIGKILL && !s.at.Before(t) && (s.senderKind == names.SenderRuntime || s.senderKind == names.SenderKubelet) {
			return s
		}
	}
	return nil
}

// attrs are the window's attributes on the container's stop.
func (w graceWindow) attrs() []span.Attr {
	a := []span.Attr{span.Float(names.GraceLeftSeconds, w.left.Seconds())}
	if w.used {
		a = append(a, span.Bool(names.GraceUsedByPreStop, true))
	}
	return a
}

// noteWindow puts what a container's grace window showed on its
// termination: the kubelet's rerun of preStop (once per pod), and a
// SIGKILL that was the kubelet's minimum.
func (c *Correlator) noteWindow(ct *container, w graceWindow, killNote string) {
	p := ct.pod
	if w.rerun && !p.rerunNoted {
		p.rerunNoted = true
		p.termEvents = append(p.termEvents, span.SpanEvent{Name: names.EventPreStopRerun, Time: w.start, Attrs: []span.Attr{
			span.String(names.K8sContainerName, ct.name), span.String(names.HookHandler, w.handler.Kind),
			span.Float(names.GracePeriodSeconds, w.grace.Seconds()),
			span.String(names.Message, "the kubelet restarted mid-termination, ran preStop again and began a new grace period")}})
	}
	if killNote != "" && p.kubeletKillNote == "" {
		p.kubeletKillNote = killNote
	}
	if killNote != "" && w.used {
		p.graceUsedByPreStop = true
	}
}

// hookAttrs describe a hook's handler.
func hookAttrs(h *fact.Handler) []span.Attr {
	a := []span.Attr{span.String(names.HookHandler, h.Kind)}
	switch h.Kind {
	case handlerSleep:
		a = append(a, span.Int(names.HookSleepSeconds, h.SleepSeconds))
	case handlerHTTPGet:
		a = append(a, span.String(names.HookHTTPPath, h.HTTPPath), span.String(names.HookHTTPPort, h.HTTPPort))
	}
	return a
}

// kubeletRun tells a handler the kubelet runs itself.
func kubeletRun(h *fact.Handler) bool {
	return h != nil && (h.Kind == handlerSleep || h.Kind == handlerHTTPGet)
}

// kubeletPreStopSpans emits container.prestop for a hook the kubelet ran
// itself: from the deletion (or the kubelet's rerun) to the runtime's stop
// signal, which the kubelet sends once the hook is over. After a rerun,
// the first run shows too, cut where the second began (the old kubelet's
// end is not seen: it lasted at most that long).
func (c *Correlator) kubeletPreStopSpans(ct *container, w graceWindow) {
	if !kubeletRun(w.handler) {
		return
	}
	p := ct.pod
	attrs := append(append(containerAttrs(ct), hookAttrs(w.handler)...), span.Float(names.GracePeriodSeconds, w.grace.Seconds()))
	if w.rerun {
		c.emit(p, span.Span{SpanID: p.spanID(ctKey(names.SpanContainerPreStop+"/kubelet/0", ct)), Parent: c.terminationParent(p),
			Name: names.SpanContainerPreStop, Start: p.deletedAt, End: w.start, Status: span.StatusError,
			StatusMessage: "interrupted: the kubelet restarted and ran preStop again", Attrs: attrs})
	}
	status, msg := span.StatusOK, ""
	if w.used {
		status, msg = span.StatusError, fmt.Sprintf("preStop hook used the grace period (%s): the kubelet gave the app its 2 s minimum", w.grace)
	}
	c.emit(p, span.Span{SpanID: p.spanID(ctKey(names.SpanContainerPreStop+"/kubelet", ct)), Parent: c.terminationParent(p),
		Name: names.SpanContainerPreStop, Start: w.start, End: w.stop, Status: status, StatusMessage: msg, Attrs: attrs})
}

// kubeletPostStarts emits container.poststart for postStart hooks the
// kubelet ran itself, once the facts end them. The kubelet runs the hook
// right after the runtime started the container and reports the container
// running only once the hook returned, so the span runs from the runtime's
// start to the first API status that shows this container running (or
// ended): its end is when the tracer saw that status, an upper bound on
// the hook's end by the kubelet's status write and the watch's delivery.
// A container that ended first ends the span at its exit: an error with
// the kubelet's FailedPostStartHook Event (it kills the container), else
// unset (the status that showed it running was not seen).
func (c *Correlator) kubeletPostStarts(p *pod) {
	for _, ct := range p.containers {
		if ct.sandbox || ct.postStartDone || ct.name == "" {
			continue
		}
		spec, _ := p.spec(ct.name)
		if spec == nil || !kubeletRun(spec.PostStart) {
			continue
		}
		start := ct.startedAt
		if start.IsZero() {
			start = ct.startedAtOr()
		}
		if start.IsZero() || !p.observedFrom.IsZero() && start.Before(p.observedFrom) {
			continue // started before the tracer: the hook's start is not known
		}
		var end time.Time
		status, msg := span.StatusOK, ""
		switch {
		case p.apiRunning(ct.id):
			end = c.now
		case ct.exited:
			end, status, msg = ct.exitAt, span.StatusUnset, "the container ended before the kubelet reported it running"
			if ev := p.recentEvent("FailedPostStartHook", ct.name, start, ct.exitAt); ev != nil {
				status, msg = span.StatusError, ev.Message
			}
		default:
			continue
		}
		ct.postStartDone = true
		attrs := append(containerAttrs(ct), hookAttrs(spec.PostStart)...)
		c.emit(p, span.Span{SpanID: p.spanID(ctKey(names.SpanContainerPostStart+"/kubelet", ct)), Parent: c.startupID(p),
			Name: names.SpanContainerPostStart, Start: start, End: latest(start, end), Status: status, StatusMessage: msg, Attrs: attrs})
	}
}

// apiRunning: the API's status shows this container (by ID) running.
func (p *pod) apiRunning(id string) bool {
	st := p.statusByID(id)
	return st != nil && st.State.Running != nil
}

// apiStarted: the API's status shows this container (by ID) started:
// running, or terminated after a start.
func (p *pod) apiStarted(id string) bool {
	st := p.statusByID(id)
	if st == nil {
		return false
	}
	t := st.State.Terminated
	return st.State.Running != nil || t != nil && !t.StartedAt.IsZero()
}
