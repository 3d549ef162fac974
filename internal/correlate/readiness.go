// Readiness after the start-up: a pod that was Ready and lost it (a
// readiness probe failing, a dependency down) is out of its Services'
// endpoints until it regains it. Each episode is a span, pod.not_ready,
// under the root, emitted when readiness comes back (or at the pod's
// end), with what the failing probe said: the kubelet's Unhealthy message
// (which carries an exec probe's output), the exec probe the kernel saw
// fail (its command and exit), and when each of its Services withdrew it
// (podchron.endpoint.withdrawn, endpoints.go): a Service that went on
// listing it ready sent it traffic it was failing its probe for.

package correlate

import (
	"fmt"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
)

// podReadiness: readiness after the start-up.
type podReadiness struct {
	wasReady      bool      // Ready was True after the start-up (or ended it)
	notReadySince time.Time // the current episode's start (Ready False)
	// notReadyLost: the loss as this instance saw it when within the
	// API's whole second (else notReadySince), what a Service's delay in
	// withdrawing the pod is measured from.
	notReadyLost time.Time
	notReady     string // the containers not ready then
	// readyRaw: the Ready condition's transition time as the API gave it
	// (before its sharpening by the sighting, which only the instance that
	// saw it change can do); notReadyKey: readyRaw when the episode began,
	// its span's ID, the same for a restarted tracer that resumes it.
	readyRaw, notReadyKey time.Time
	// resumedReady: for a pod resumed (resume.go), when it was Ready as
	// far as the API says (zero while it has not been): the probes after
	// it are not the start-up's.
	resumedReady time.Time
	episodes     int // episodes emitted as spans (within maxNotReadySpans)
	// lastReadinessFail: the latest failing exec readiness probe the
	// kernel saw.
	lastReadinessFail *readinessFail
}

type readinessFail struct {
	at        time.Time
	container string
	args      []string
	exitCode  int
	signal    string
}

// readyTransition is the Ready condition's transition time in info.
func readyTransition(info *fact.PodInfo) time.Time {
	for _, cd := range info.Conditions {
		if cd.Type == "Ready" {
			return cd.LastTransitionTime
		}
	}
	return time.Time{}
}

// readyCondition is the pod's Ready condition, if the API gave one.
func (p *pod) readyCondition() (fact.Condition, bool) {
	if p.info != nil {
		for _, cd := range p.info.Conditions {
			if cd.Type == "Ready" {
				return cd, true
			}
		}
	}
	return fact.Condition{}, false
}

// readinessChanged follows the pod's Ready condition once its start-up is
// over: Ready lost opens an episode, Ready regained closes it.
func (c *Correlator) readinessChanged(p *pod) {
	if !p.startupDone || p.finished || p.info == nil {
		return
	}
	cd, ok := p.readyCondition()
	if !ok {
		return
	}
	at := cd.LastTransitionTime
	if at.IsZero() {
		at = c.now
	}
	switch {
	case cd.Status == "True" && !p.notReadySince.IsZero():
		c.notReadySpan(p, at, "", true)
	case cd.Status == "True":
		p.wasReady = true
		if p.resumed && p.resumedReady.IsZero() {
			p.resumedReady = at
		}
	case (p.wasReady || !p.readyAt.IsZero() || p.lateReady) && p.notReadySince.IsZero() && p.terminating.IsZero() && p.info.DeletionTimestamp == nil:
		p.notReadySince, p.notReadyKey, p.notReadyLost = at, p.readyRaw, sharpened(at, c.now)
		var nr []string
		for _, st := range p.info.Statuses {
			if !st.Ready {
				nr = append(nr, st.Name)
			}
		}
		p.notReady = strings.Join(nr, ",")
	}
}

// notReadyAtEnd closes an episode still open when the pod's termination
// began or the pod ended (measured unless the tracer stopped: an episode
// it cut short is no episode's length).
func (c *Correlator) notReadyAtEnd(p *pod, at time.Time, measured bool) {
	if p.notReadySince.IsZero() {
		return
	}
	if !p.terminating.IsZero() && p.terminating.Before(at) {
		at = p.terminating
	}
	c.notReadySpan(p, at, "not Ready until the pod's end", measured)
}

// notReadySpan emits an episode (past maxNotReadySpans, an event on the
// root with its length and a late withdrawal's words, counted there when
// over its cap) and, when measured, measures its length and counts it if
// a Service withdrew the pod late (the words its message gets from
// episodeWithdrawals).
func (c *Correlator) notReadySpan(p *pod, end time.Time, unfinished string, measured bool) {
	start, key, lost := p.notReadySince, p.notReadyKey, p.notReadyLost
	p.notReadySince, p.notReadyKey, p.notReadyLost = time.Time{}, time.Time{}, time.Time{}
	if key.IsZero() {
		key = start
	}
	// The API's times are whole seconds; an instance places them on its
	// timeline with its own measured offset (ns to ms apart): the nearest
	// second is the same for every instance.
	key = key.Round(time.Second)
	if end.Before(start) {
		end = start
	}
	events, late := p.episodeWithdrawals(start, lost, end)
	if measured {
		c.observer(p).PodNotReady(p.namespace(), p.ownerKind(), end.Sub(start), p.trace.String())
		if late != "" {
			c.observer(p).EndpointWithdrawnAfterNotReady(p.namespace())
		}
	}
	attrs := c.readinessFailAttrs(p, start, end)
	if p.episodes >= maxNotReadySpans {
		attrs = append(attrs, span.Float(names.NotReadySeconds, end.Sub(start).Seconds()))
		if late != "" {
			attrs = append(attrs, span.String(names.ReadinessLateWithdrawal, late))
		}
		p.addRootEvent(span.SpanEvent{Name: names.EventReadinessLost, Time: start, Attrs: attrs})
		return
	}
	p.episodes++
	msg := "not Ready"
	if unfinished != "" {
		msg = unfinished
	}
	for _, a := range attrs {
		if a.Key == names.ReadinessProbeOutput {
			msg += ": " + a.Value.(string)
		}
	}
	if late != "" {
		msg += "; " + late
	}
	c.emit(p, span.Span{SpanID: p.spanID(fmt.Sprintf("notready@%d", key.UnixNano())), Parent: c.rootID(p), Name: names.SpanPodNotReady,
		Start: start, End: end, Status: span.StatusError, StatusMessage: msg, Attrs: attrs, Events: events})
}

// readinessFailAttrs says what kept the pod not Ready from lost to end: the
// containers not ready, the kubelet's latest Unhealthy (readiness) message,
// the latest failing exec readiness probe. The probe keeps failing after
// the loss, and the kubelet's Unhealthy Event is one object whose
// LastTime moves on: both count up to the episode's end.
func (c *Correlator) readinessFailAttrs(p *pod, lost, end time.Time) []span.Attr {
	var attrs []span.Attr
	if p.notReady != "" {
		attrs = append(attrs, span.String(names.ReadinessNotReady, p.notReady))
	}
	for i := len(p.k8sEvents) - 1; i >= 0; i-- {
		ev := p.k8sEvents[i]
		if ev.Reason != "Unhealthy" || !strings.HasPrefix(ev.Message, "Readiness probe") {
			continue
		}
		if ev.FirstTime.After(end) || ev.LastTime.Before(lost.Add(-readinessLookBack)) {
			continue
		}
		attrs = append(attrs, span.String(names.ReadinessProbeOutput, strings.TrimPrefix(ev.Message, "Readiness probe failed: ")))
		if ev.Container != "" && p.notReady == "" {
			attrs = append(attrs, span.String(names.K8sContainerName, ev.Container))
		}
		break
	}
	if f := p.lastReadinessFail; f != nil && !f.at.After(end) && !f.at.Before(lost.Add(-readinessLookBack)) {
		attrs = append(attrs, span.Strings(names.ProcessCommandArgs, f.args...))
		if f.signal != "" {
			attrs = append(attrs, span.String(names.SignalName, f.signal))
		} else {
			attrs = append(attrs, span.Int(names.ProcessExitCode, int64(f.exitCode)))
		}
	}
	return attrs
}

// readinessLookBack: how long before the loss a failing probe or its
// Unhealthy event still explains it (failureThreshold x periodSeconds is
// 30 s by default; long periods exist).
const readinessLookBack = 10 * time.Minute

// noteReadinessFail remembers a failing exec readiness probe.
func (p *pod) noteReadinessFail(ct *container, s *session, e *kernel.ExitEvent) {
	f := &readinessFail{at: e.Time, container: ct.name, args: s.args, exitCode: e.ExitCode}
	if e.Signal != 0 {
		f.signal = kernel.SignalName(e.Signal)
	}
	p.lastReadinessFail = f
}
