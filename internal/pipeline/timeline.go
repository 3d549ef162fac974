package pipeline

import (
	"log/slog"
	"time"

	"github.com/podchron/podchron/internal/clock"
	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
)

// Placer puts one source's wall-clock times on the tracer's timeline
// (clock.Timeline) before the input is queued: the runtime's and the
// kubelet's times by the node wall clock's step, the API server's by its
// measured offset, which it also samples from the pods it sees. One per
// source, used only by that source's forwarder.
type Placer struct {
	tl     *clock.Timeline
	source string
	// live: pods seen without a deletion, so that the update first
	// carrying one is a fresh deletion (an offset sample); a pod leaves it
	// at its deletion.
	live map[string]bool
}

// NewPlacer places source's inputs (SourceRuntime, SourceAPI; others are left as they are) on tl.
func NewPlacer(tl *clock.Timeline, source string) *Placer {
	return &Placer{tl: tl, source: source, live: map[string]bool{}}
}

// Place maps in's times onto the timeline. Inputs are stamped (Time) by
// the timeline's clock already; facts' own times are copied before they
// are changed (a source may keep what it sent).
func (pl *Placer) Place(in *fact.Input) {
	if pl == nil || pl.tl == nil {
		return
	}
	switch pl.source {
	case SourceRuntime:
		if pl.tl.Step() == 0 {
			return
		}
		if in.Runtime != nil {
			in.Runtime = pl.runtime(*in.Runtime)
		}
		if in.Progress != nil {
			// The runtime's progress is a poll's snapshot time: the node's
			// wall clock.
			pr := *in.Progress
			pr.Until = pl.tl.FromNode(pr.Until)
			in.Progress = &pr
		}
	case SourceAPI:
		if in.Pod != nil {
			pl.sample(in.Pod, in.Time)
		}
		if pl.tl.Identity() {
			return
		}
		if in.Pod != nil {
			in.Pod = pl.pod(*in.Pod)
		}
		if in.Event != nil {
			in.Event = pl.event(*in.Event)
		}
	}
}

// sample takes the API offset's samples from a pod: its creation when
// first seen, its deletion request in the update that first carries it.
func (pl *Placer) sample(p *fact.PodInfo, recv time.Time) {
	live, seen := pl.live[p.UID]
	if !seen && p.DeletionTimestamp == nil && !p.Deleted {
		pl.tl.API.SampleCreation(p.CreatedAt, recv)
	}
	switch {
	case p.Deleted:
		delete(pl.live, p.UID)
	case p.DeletionTimestamp == nil:
		pl.live[p.UID] = true
	case live:
		grace := time.Duration(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*p.DeletionGracePeriodSeconds) * time.Second
		}
		pl.tl.API.SampleDeletion(p.DeletionTimestamp.Add(-grace), recv)
		delete(pl.live, p.UID)
	}
}

func (pl *Placer) runtime(ev cri.Event) *cri.Event {
	node := pl.tl.FromNode
	ev.At, ev.Observed = node(ev.At), node(ev.Observed)
	if ev.Sandbox != nil {
		sb := *ev.Sandbox
		sb.CreatedAt = node(sb.CreatedAt)
		ev.Sandbox = &sb
	}
	if ev.Container != nil {
		ct := *ev.Container
		ct.CreatedAt, ct.StartedAt, ct.FinishedAt = node(ct.CreatedAt), node(ct.StartedAt), node(ct.FinishedAt)
		ev.Container = &ct
	}
	if ev.Gap != nil {
		g := *ev.Gap
		g.LastSeen, g.Since, g.Until = node(g.LastSeen), node(g.Since), node(g.Until)
		ev.Gap = &g
	}
	return &ev
}

// pod maps a pod's times: the API server's own (creation, deletion) by
// its offset, the kubelet's (conditions, container states) by the node's
// step.
func (pl *Placer) pod(p fact.PodInfo) *fact.PodInfo {
	node := pl.tl.FromNode
	p.CreatedAt = pl.tl.FromAPI(p.CreatedAt)
	if p.DeletionTimestamp != nil {
		d := pl.tl.FromAPI(*p.DeletionTimestamp)
		p.DeletionTimestamp = &d
	}
	conds := make([]fact.Condition, len(p.Conditions))
	for i, c := range p.Conditions {
		c.LastTransitionTime = node(c.LastTransitionTime)
		conds[i] = c
	}
	p.Conditions = conds
	p.InitStatuses = pl.statuses(p.InitStatuses)
	p.Statuses = pl.statuses(p.Statuses)
	return &p
}

func (pl *Placer) statuses(in []fact.ContainerStatus) []fact.ContainerStatus {
	if in == nil {
		return nil
	}
	out := make([]fact.ContainerStatus, len(in))
	for i, st := range in {
		st.State, st.LastState = pl.state(st.State), pl.state(st.LastState)
		out[i] = st
	}
	return out
}

func (pl *Placer) state(s fact.ContainerState) fact.ContainerState {
	node := pl.tl.FromNode
	if s.Running != nil {
		r := *s.Running
		r.StartedAt = node(r.StartedAt)
		s.Running = &r
	}
	if s.Terminated != nil {
		t := *s.Terminated
		t.StartedAt, t.FinishedAt = node(t.StartedAt), node(t.FinishedAt)
		s.Terminated = &t
	}
	return s
}

// event maps an Event's times: the kubelet's by the node's step, the
// control plane's (scheduler, controllers) by the API server's offset.
func (pl *Placer) event(ev fact.K8sEvent) *fact.K8sEvent {
	m := pl.tl.FromAPI
	if ev.Source == "kubelet" {
		m = pl.tl.FromNode
	}
	ev.FirstTime, ev.LastTime = m(ev.FirstTime), m(ev.LastTime)
	return &ev
}

// remeasure re-measures the node wall clock's step, logging a new one.
func remeasure(tl *clock.Timeline, last *time.Duration, log *slog.Logger) {
	if tl == nil {
		return
	}
	s := tl.Remeasure()
	if d := s - *last; d >= time.Second || d <= -time.Second {
		log.Warn("the node's wall clock stepped: its times are mapped back onto the tracer's timeline (boot clock)", "step_since_start", s, "api_offset", tl.API.Offset())
	}
	*last = s
}
