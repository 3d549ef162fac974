// Resume, never re-decide. A pod the tracer first sees after its containers
// started (a tracer restart, an informer relist the tracer was not there
// for, a node reboot) had its start-up decided by whoever watched it then:
// an earlier tracer instance reported it (Ready, or an ERROR when it gave
// up or the pod failed), or nobody did. What the API shows now cannot tell
// that start-up again: a NotReady pod may have been Ready for days, a
// Failed (Evicted) pod may have served for weeks, a Ready one may have
// been NotReady across the restart. Such a pod gets no pod.startup and no
// start-up observation; its restarts, recreated sandboxes and termination
// are traced as they come.
//
// A pod caught between its app container's start and its first Ready by a
// tracer restart is resumed too: its start-up is lost rather than told
// twice or wrong.

package correlate

import (
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
)

// resume marks a pod first seen through the API after its start-up as
// resumed: its start-up is done, undecided.
func (c *Correlator) resume(p *pod, info *fact.PodInfo) {
	if p.observedFrom.IsZero() || p.startupDone || !startedBefore(info, p.observedFrom) {
		return
	}
	p.startupDone = true
	p.resumed = true
	// Ready before this instance, Ready no more: a readiness episode in
	// progress (readiness.go), from the condition's transition time, as
	// the previous instance had it.
	p.wasReady = readyBefore(info, p.observedFrom)
	if p.wasReady {
		p.resumedReady = resumedReadyAt(info, p.observedFrom)
	}
}

// resumedReadyAt bounds when a pod resumed Ready-before-since got Ready,
// for the probes the tracer finds running then (begun before it, alive at
// its start-up scan): Ready True now, the condition's transition, in the
// API's whole second, so the second after it (the probe that made it
// Ready may have begun within that second); Ready turned False since, that
// transition (it was True before it); else since.
func resumedReadyAt(info *fact.PodInfo, since time.Time) time.Time {
	for _, cd := range info.Conditions {
		if cd.Type != "Ready" || cd.LastTransitionTime.IsZero() || !cd.LastTransitionTime.Before(since) {
			continue
		}
		if cd.Status == "True" {
			if at := cd.LastTransitionTime.Truncate(time.Second).Add(time.Second); at.Before(since) {
				return at
			}
			return since
		}
		return cd.LastTransitionTime
	}
	return since
}

// startedBefore tells, from the API's view, a pod whose start-up was out
// before since: an app container ran before then (running, ended, or
// ended before its current run), or the pod was Ready before then (Ready
// now since before then, or Ready turned False after the pod was
// initialized: it had been True in between, as the kubelet sets Ready
// False when it first reports the pod, before or with Initialized).
func startedBefore(info *fact.PodInfo, since time.Time) bool {
	before := func(t time.Time) bool { return !t.IsZero() && t.Before(since) }
	for _, st := range info.Statuses {
		if r := st.State.Running; r != nil && before(r.StartedAt) {
			return true
		}
		for _, t := range []*fact.Terminated{st.State.Terminated, st.LastState.Terminated} {
			if t != nil && (before(t.StartedAt) || t.StartedAt.IsZero() && before(t.FinishedAt)) {
				return true
			}
		}
	}
	return readyBefore(info, since)
}

// readyBefore: the API shows the pod Ready before since (Ready now since
// before then, or Ready turned False after the pod was initialized: it had
// been True in between, as the kubelet sets Ready False when it first
// reports the pod, before or with Initialized).
func readyBefore(info *fact.PodInfo, since time.Time) bool {
	before := func(t time.Time) bool { return !t.IsZero() && t.Before(since) }
	var ready, initialized *fact.Condition
	for i, cd := range info.Conditions {
		switch cd.Type {
		case "Ready":
			ready = &info.Conditions[i]
		case "Initialized":
			initialized = &info.Conditions[i]
		}
	}
	if ready == nil || !before(ready.LastTransitionTime) {
		return false
	}
	if ready.Status == "True" {
		return true
	}
	return initialized != nil && initialized.Status == "True" && ready.LastTransitionTime.After(initialized.LastTransitionTime)
}

// unconfirmed: a pod this instance knows only from the cgroup directories
// its start-up scan found, with no process alive in them, no sandbox or
// container the runtime named, no API object and nothing emitted. Its
// sandbox was gone from the runtime before this instance started (the
// kernel removes a pod's cgroup directories after the runtime's removal):
// its trace, if any, was the previous instance's to end. Told here, it
// would be a second root for an ended trace ("pod still alive"), with the
// same IDs and different content.
func (c *Correlator) unconfirmed(p *pod) bool {
	if p.observedFrom.IsZero() || p.info != nil || p.sandboxID != "" || len(p.emitted) > 0 {
		return false
	}
	if told, known := c.toldBefore(p.uid); known && !told {
		return false // nobody told its end: this instance does
	}
	for _, ct := range p.containers {
		if !ct.createdAt.IsZero() || !ct.startedAtOr().IsZero() || len(ct.pids) > 0 {
			return false
		}
	}
	return true
}

// endedBeforeTracer: the API server's first view of a pod, created before
// this instance started and not seen starting by it, shows it terminal
// (Succeeded or Failed) with every container ended before the instance
// started, and the node no longer has its cgroup: a Job's pod kept by its
// history limit or TTL, an Evicted pod awaiting the pod GC. Its trace was
// the previous instance's to end (at its cgroup's removal), or nobody's:
// opened now, its later deletion would give it a second root, a forced
// termination and a start-up "gone before Ready", with the same IDs.
func (c *Correlator) endedBeforeTracer(p *pod, info *fact.PodInfo) bool {
	if !doneOnNodeBefore(p, info) {
		return false
	}
	if told, known := c.toldBefore(p.uid); known && !told {
		// Nobody told its end (the previous instance stopped first): this
		// instance does, at once. The start-up scan found no cgroup of the
		// pod: its end on the node (the cgroup's removal, which ends a
		// terminal pod's trace) came before this instance, which takes its
		// own start for it; waiting for the object's deletion instead
		// would hold the trace open for as long as the API keeps a
		// finished Job's pod, and tell a forced termination that never was.
		p.cgroupRemoved = p.observedFrom
		return false
	}
	return true
}

// doneOnNodeBefore: the API's first view of a pod created before this
// instance shows it terminal with every container ended before the
// instance started, and the start-up scan found no cgroup of it.
func doneOnNodeBefore(p *pod, info *fact.PodInfo) bool {
	if p.observedFrom.IsZero() || p.cgroupSeen || len(p.emitted) > 0 ||
		info.Phase != "Succeeded" && info.Phase != "Failed" {
		return false
	}
	statuses := append(append([]fact.ContainerStatus(nil), info.InitStatuses...), info.Statuses...)
	for _, st := range statuses {
		t := st.State.Terminated
		if t == nil || t.FinishedAt.IsZero() || !t.FinishedAt.Before(p.observedFrom) {
			return false
		}
	}
	return len(statuses) > 0
}

// untold records a pod whose trace ended before this instance as ended
// (its later facts are counted as *_after_trace_end and dropped), emitting nothing:
// counted as the miss pod_ended_before_start.
func (c *Correlator) untold(p *pod, info *fact.PodInfo) {
	c.miss(names.MissPodEndedBeforeStart)
	p.finished = true
	p.info = info // for its tombstone: the object deleted already?
	c.bury(p)
	c.unindex(p)
}
