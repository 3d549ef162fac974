// The API server's facts in: the pod object (spec, status, conditions,
// deletion), its Kubernetes Events, and whether the API server is reachable.
// The handlers only update the model and note changes for the lifecycle step.

package correlate

import (
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

func (c *Correlator) podInfo(info *fact.PodInfo) {
	if c.cfg.NodeName != "" && info.NodeName != "" && info.NodeName != c.cfg.NodeName {
		return
	}
	at := info.CreatedAt
	if at.IsZero() {
		at = c.now
	}
	uid, info := c.mirrored(info)
	if info.Deleted {
		c.endedAPIDeleted(uid)
	}
	_, known := c.pods[uid]
	p := c.pod(uid, at, names.MissAPIAfterTraceEnd)
	if p == nil {
		return
	}
	if p.info == nil && !c.started.IsZero() && info.CreatedAt.Before(c.started) &&
		(!known || p.sandboxCreated.Before(c.started)) {
		// Created before the tracer, and not seen starting by it (first
		// named by the runtime's snapshot, or by nothing).
		p.observedFrom = c.started
	}
	if p.info == nil && c.endedBeforeTracer(p, info) {
		c.untold(p, info)
		return
	}
	if p.info == nil {
		c.resume(p, info)
	}
	cp := *info
	p.readyRaw = readyTransition(info)
	c.sharpenAPITimes(p, &cp)
	p.info = &cp
	info = p.info
	p.noteWaiting()
	c.podSeen(p)
	c.learnContainers(p, info)
	c.misreportedOOMs(p)
	p.noteDeletion(info)
	if info.Deleted {
		c.note(change{kind: changePodGoing, p: p, at: c.now})
		return
	}
	if reason, ok := p.goingReason(); ok && p.terminating.IsZero() {
		// The kubelet (or a controller) ends the pod without an API
		// deletion, and its status can come after the stop: the
		// termination began with the runtime's first stop signal to a
		// container that then ended.
		if at := c.stopBegun(p); !at.IsZero() {
			p.terminating = at
			p.terminationReason = reason
		}
	}
	c.note(change{kind: changePodUpdated, p: p})
	if !p.cgroupRemoved.IsZero() {
		// Done on the node: before this instance (which tells its end,
		// endedBeforeTracer), or waiting for the status that tells why
		// (statusCaughtUp).
		c.note(change{kind: changePodGoing, p: p, at: p.cgroupRemoved})
	}
}

// mirrored returns the UID a pod object's facts go under, and the object
// as the model takes it: a static pod's mirror speaks for the static pod,
// one trace under the static pod's own UID (its cgroups', the runtime's
// and the kubelet's Events'). The mirror object's deletion is not the
// pod's (the kubelet recreates it): the static pod ends with its cgroups.
func (c *Correlator) mirrored(info *fact.PodInfo) (string, *fact.PodInfo) {
	if info.ConfigUID == "" || info.ConfigUID == info.UID {
		return info.UID, info
	}
	if c.mirrors == nil {
		c.mirrors = map[string]string{}
	}
	c.mirrors[info.UID] = info.ConfigUID
	stripped := *info
	stripped.DeletionTimestamp, stripped.DeletionGracePeriodSeconds, stripped.Deleted = nil, nil, false
	return info.ConfigUID, &stripped
}

// learnContainers learns container names, attempts and init-ness from the
// pod's statuses and spec.
func (c *Correlator) learnContainers(p *pod, info *fact.PodInfo) {
	for _, st := range append(append([]fact.ContainerStatus(nil), info.InitStatuses...), info.Statuses...) {
		if st.ContainerID == "" {
			continue
		}
		ct := c.container(st.ContainerID, p)
		if ct.name == "" {
			ct.name = st.Name
		}
		if st.RestartCount > 0 && ct.attempt == 0 {
			ct.attempt = uint32(st.RestartCount)
		}
		if spec, isInit := p.spec(st.Name); isInit && spec != nil && !spec.Sidecar {
			ct.init = true
		}
		c.apiExited(ct, st.State.Terminated)
	}
}

// apiExited closes a run the API server shows terminated that neither the
// kernel nor the runtime reported ended, when no process of it is known to
// live: its exit was before this tracer instance (a restart between the
// exit and the runtime's next poll) or lost, and the runtime may remove the
// container before it polls it exited. The kubelet's status is the last
// fact left of that end.
func (c *Correlator) apiExited(ct *container, t *fact.Terminated) {
	if t == nil || t.FinishedAt.IsZero() || ct.exited || ct.finalized || ct.sandbox ||
		ct.startedAtOr().IsZero() || len(ct.pids) > 0 || t.ContainerID != "" && t.ContainerID != ct.id {
		return
	}
	ct.exited, ct.runtimeExit = true, true
	ct.exitAt, ct.exitCode, ct.reason = t.FinishedAt, int(t.ExitCode), t.Reason
	if t.Signal != 0 {
		ct.exitSignal = sigNum(int(t.Signal))
	} else if t.ExitCode > 128 && t.ExitCode < 128+65 {
		ct.exitSignal = sigNum(int(t.ExitCode) - 128)
	}
	c.note(change{kind: changeContainerExited, ct: ct})
}

// noteDeletion takes the API deletion's times the first time the object
// carries them: requested, the grace period's end, and the termination's
// start unless a stop came earlier.
func (p *pod) noteDeletion(info *fact.PodInfo) {
	if info.DeletionTimestamp == nil || !p.deletedAt.IsZero() {
		return
	}
	grace := int64(0)
	if info.DeletionGracePeriodSeconds != nil {
		grace = *info.DeletionGracePeriodSeconds
	}
	p.deadline = *info.DeletionTimestamp
	p.grace = time.Duration(grace) * time.Second
	p.deletedAt = p.deadline.Add(-p.grace)
	p.forced = grace == 0
	if p.terminating.IsZero() || p.deletedAt.Before(p.terminating) {
		p.terminating = p.deletedAt
		// The mirror of stopBeforeDeletion: the runtime's stop signal came
		// first (the watch delivered the deletion late) and the deletion's
		// time, off by up to the API's whole second, is stamped after it:
		// the stop it caused cannot come before it.
		if s := p.firstStop(); !s.IsZero() && s.Before(p.deletedAt) && p.deletedAt.Sub(s) < deletionUncertainty {
			p.terminating = s
		}
	}
}

// deletionUncertainty: how far a deletion's time, mapped from the API
// server's whole second, can be after the stop signal it caused.
const deletionUncertainty = time.Second

// firstStop is the runtime's earliest stop signal to the init of one of the
// pod's containers' last runs, zero if none.
func (p *pod) firstStop() time.Time {
	var first time.Time
	for _, ct := range p.containers {
		if ct.sandbox || ct.nextAttempt() != nil {
			continue // an earlier run, restarted by the kubelet
		}
		if s := ct.stopSignal(); s != nil && (s.senderKind == names.SenderRuntime || s.senderKind == names.SenderKubelet) {
			if first.IsZero() || s.at.Before(first) {
				first = s.at
			}
		}
	}
	return first
}

// sharpened is t, an API server's whole-second time, sharpened by seen,
// when the fact was seen: seen when it falls within t's second, else t.
func sharpened(t, seen time.Time) time.Time {
	if !seen.Before(t) && seen.Before(t.Add(time.Second)) {
		return seen
	}
	return t
}

// sharpenAPITimes replaces the API server's whole-second timestamps
// (metav1.Time is truncated to seconds) by when the tracer saw the fact, when
// that sighting falls within the second: the watch delivers in milliseconds,
// so a pod created at 12:00:00.900 no longer seems to wait 0.9 s longer for
// its sandbox. Facts older than the tracer keep their API times. The Ready
// condition is sharpened from the kernel instead (refineReady).
func (c *Correlator) sharpenAPITimes(p *pod, info *fact.PodInfo) {
	sharpen := func(key string, t time.Time) time.Time {
		if t.IsZero() || t.Before(c.started) {
			// Older than the tracer: the API server's list at start-up
			// (a restart) shows it, and its sighting is the list's, not
			// the fact's.
			return t
		}
		seen, ok := p.sightings[key]
		if !ok {
			seen = c.now
			p.sightings[key] = seen
		}
		return sharpened(t, seen)
	}
	info.CreatedAt = sharpen("created", info.CreatedAt)
	if info.DeletionTimestamp != nil {
		grace := time.Duration(0)
		if info.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*info.DeletionGracePeriodSeconds) * time.Second
		}
		requested := sharpen("deletion", info.DeletionTimestamp.Add(-grace))
		deadline := requested.Add(grace)
		info.DeletionTimestamp = &deadline
	}
	conds := make([]fact.Condition, len(info.Conditions))
	copy(conds, info.Conditions)
	for i, cd := range conds {
		if cd.Type == "PodScheduled" && cd.Status == "True" {
			conds[i].LastTransitionTime = sharpen("cond/PodScheduled", cd.LastTransitionTime)
		}
	}
	info.Conditions = conds
}

func (c *Correlator) k8sEvent(ev *fact.K8sEvent) {
	ev, p := c.eventPod(boundEvent(ev))
	if p == nil {
		return
	}
	if n, seen := p.events[ev.UID]; seen && n >= ev.Count {
		return
	}
	p.events[ev.UID] = ev.Count
	cp := *ev
	p.addK8sEvent(&cp)
	switch ev.Reason {
	case "Pulling", "Pulled", "Failed", "BackOff":
		p.pullEvent(ev)
	case "Evicted":
		// The kubelet evicts the pod alone (before its stop; its status
		// may never say Evicted): the termination began at the stop.
		if at := c.stopBegun(p); p.terminating.IsZero() && !at.IsZero() && p.info != nil && p.info.DeletionTimestamp == nil {
			p.terminating, p.terminationReason = at, "Evicted"
		}
		c.note(change{kind: changePodUpdated, p: p})
	case "Unhealthy":
		for _, ct := range p.containers {
			if ct.name == ev.Container && !ct.exited {
				ct.addProbeFail(span.SpanEvent{Name: names.EventProbeFailed, Time: ev.LastTime,
					Attrs: append([]span.Attr{span.String(names.ProbeType, probeType(ev.Message)), span.String(names.Message, ev.Message)}, eventCut(ev)...)})
			}
		}
	}
	attrs := []span.Attr{span.String(names.K8sEventReason, ev.Reason), span.String(names.Message, ev.Message)}
	if ev.Container != "" {
		attrs = append(attrs, span.String(names.K8sContainerName, ev.Container))
	}
	if ev.Count > 1 {
		attrs = append(attrs, span.Int(names.K8sEventCount, int64(ev.Count)))
	}
	attrs = append(attrs, eventCut(ev)...)
	p.addRootEvent(span.SpanEvent{Name: names.K8sEventName(ev.Reason), Time: ev.LastTime, Attrs: attrs})
}

// eventPod returns the pod a Kubernetes Event speaks for (a static pod's
// mirror's Event under the static pod's UID), nil when there is none: an
// Event for a pod not seen yet is held, one from another namespace than
// the pod's is refused.
func (c *Correlator) eventPod(ev *fact.K8sEvent) (*fact.K8sEvent, *pod) {
	if cfg, ok := c.mirrors[ev.PodUID]; ok {
		cp := *ev
		cp.PodUID = cfg
		ev = &cp
	}
	p, ok := c.pods[ev.PodUID]
	if !ok {
		if ev.PodUID == "" {
			return ev, nil
		}
		if c.isEnded(ev.PodUID, names.MissEventAfterTraceEnd) {
			return ev, nil
		}
		// An Event alone never makes (or, after the retention, revives) a
		// pod: it waits a little for the pod to be seen.
		c.holdEvent(ev)
		return ev, nil
	}
	if ns := p.namespace(); ns != "" && ev.Namespace != "" && ev.Namespace != ns {
		// An Event lives in a namespace, and whoever may create Events
		// there can name any pod's UID: only its own namespace's Events
		// speak for a pod.
		c.miss(names.MissEventNamespaceMismatch)
		return ev, nil
	}
	return ev, p
}

// pullEvent takes an image pull's Event: Pulling starts it, Pulled ends it,
// a Failed or BackOff about the image fails it.
func (p *pod) pullEvent(ev *fact.K8sEvent) {
	key, vol := ev.Container, p.imageVolumeOf(ev)
	if vol != nil {
		key = volumePullKey + vol.Name
	}
	get := func(start time.Time) *pull {
		pl := p.pulls[key]
		if pl == nil {
			pl = &pull{container: ev.Container, start: start}
			if vol != nil {
				pl.volume, pl.image = vol.Name, vol.Reference
			}
			p.pulls[key] = pl
		}
		return pl
	}
	switch ev.Reason {
	case "Pulling":
		get(ev.FirstTime).start = ev.FirstTime
	case "Pulled":
		pl := get(ev.FirstTime)
		// A Pulled event repeats (count, lastTimestamp) at every restart
		// ("already present"): the pull is the first one.
		if pl.end.IsZero() {
			pl.end = ev.FirstTime
			pl.message = ev.Message
		}
	case "Failed", "BackOff":
		if reason, ok := pullFailure(ev.Message); ok {
			pl := get(ev.FirstTime)
			pl.failedAt = latest(pl.failedAt, ev.LastTime)
			if reason != "" {
				pl.reason = reason
			}
			if pl.failure == "" || strings.HasPrefix(ev.Message, "Failed to pull image") {
				pl.failure = ev.Message
			}
		}
	}
}

// volumePullKey prefixes an image volume's pull in pod.pulls (a container
// name cannot hold "/").
const volumePullKey = "volume/"

// imageVolumeOf is the image volume an image Event about the pod itself
// (no container: the kubelet pulls an image volume's image for the pod)
// speaks of: the first of the spec's image volumes whose reference the
// message quotes and whose pull has not ended (two volumes of one image:
// the second's is the "already present" one).
func (p *pod) imageVolumeOf(ev *fact.K8sEvent) *fact.ImageVolume {
	if ev.Container != "" || p.info == nil {
		return nil
	}
	var first *fact.ImageVolume
	for i := range p.info.ImageVolumes {
		v := &p.info.ImageVolumes[i]
		if v.Reference == "" || !strings.Contains(ev.Message, `"`+v.Reference+`"`) {
			continue
		}
		if pl := p.pulls[volumePullKey+v.Name]; pl == nil || pl.end.IsZero() {
			return v
		}
		if first == nil {
			first = v
		}
	}
	return first
}

func probeType(msg string) string {
	switch {
	case strings.HasPrefix(msg, "Liveness"):
		return "liveness"
	case strings.HasPrefix(msg, "Readiness"):
		return "readiness"
	case strings.HasPrefix(msg, "Startup"):
		return "startup"
	}
	return "unknown"
}

func (c *Correlator) apiStatus(st *fact.APIStatus) {
	c.apiKnown = true
	c.apiUp = st.Available
	reason := st.Err
	if st.Forbidden {
		reason = "forbidden (RBAC): " + st.Err
	}
	c.apiReason = reason
	if st.Available {
		c.sourceUp(fact.SourceAPI, st.Since)
	} else {
		c.sourceDown(fact.SourceAPI, "apiserver unavailable: "+reason, st.Since)
	}
}
