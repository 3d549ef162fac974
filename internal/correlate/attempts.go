// Retiring a container's finished attempts: a container restarted every 5
// minutes for a month is 8,640 attempts; what the model keeps of them is
// bounded (bounds.go: maxKeptAttempts, maxRetiredIDs).

package correlate

import (
	"slices"

	"github.com/podchron/podchron/internal/names"
)

// podAttempts: how many finished attempts the pod retired, and the IDs of
// the latest ones, so a late fact about one (the runtime's removal) is
// counted instead of making the attempt anew.
type podAttempts struct {
	attemptsRetired int
	retiredIDs      []string
}

// retired reports whether a container ID is one of the pod's retired
// attempts.
func (p *pod) retired(id string) bool { return slices.Contains(p.retiredIDs, id) }

// retireAttempts forgets finished attempts of the pod's containers once a
// newer attempt of the same name started after them: those whose spans
// are all out (finalized, no process or exec session left) and that the
// runtime removed, and, past maxKeptAttempts per name, the oldest ones
// even without the runtime's removal.
func (c *Correlator) retireAttempts(p *pod) {
	if p == nil || p.finished {
		return
	}
	kept := map[string]int{}
	var retire []*container
	// Newest first: the latest attempts of each name are kept.
	for i := len(p.containers) - 1; i >= 0; i-- {
		ct := p.containers[i]
		if !c.attemptDone(p, ct) {
			continue
		}
		kept[ct.name]++
		if ct.removed || kept[ct.name] > maxKeptAttempts {
			retire = append(retire, ct)
		}
	}
	if len(retire) == 0 {
		return
	}
	for _, ct := range retire {
		c.retireAttempt(p, ct)
	}
	p.containers = slices.DeleteFunc(p.containers, func(ct *container) bool { return slices.Contains(retire, ct) })
}

// attemptDone: an app or init container's attempt whose spans are all out
// and that a later attempt of its name replaced.
func (c *Correlator) attemptDone(p *pod, ct *container) bool {
	if ct.sandbox || ct.name == "" || !ct.finalized || len(ct.pids) > 0 || len(ct.sessions) > 0 || len(ct.doneSessions) > 0 {
		return false
	}
	for _, o := range p.containers {
		// Its back-off, decided at its start, was the last use of ct.
		if o != ct && o.name == ct.name && o.startedAtOr().After(ct.exitAt) {
			return true
		}
	}
	return false
}

// retireAttempt drops one attempt from the model's indexes and its span
// keys from the pod's emitted set (the spans are out; nothing emits them
// again once the attempt is gone).
func (c *Correlator) retireAttempt(p *pod, ct *container) {
	delete(c.containers, ct.id)
	for pid := range ct.pids {
		delete(c.procs, pid)
	}
	if ref := c.cgroups[ct.cgroupID]; ref != nil && ref.ident.ContainerID == ct.id {
		delete(c.cgroups, ct.cgroupID)
	}
	for _, kind := range []string{names.SpanContainerRun, names.SpanContainerInit, names.SpanContainerEphemeral, names.SpanContainerStop, "backoff", "start"} {
		delete(p.emitted, p.spanID(ctKey(kind, ct)).String())
	}
	for _, key := range ct.sessionKeys {
		delete(p.emitted, p.spanID(key).String())
	}
	p.attemptsRetired++
	p.retiredIDs = append(p.retiredIDs, ct.id)
	if n := len(p.retiredIDs); n > maxRetiredIDs {
		p.retiredIDs = append(p.retiredIDs[:0], p.retiredIDs[n-maxRetiredIDs:]...)
	}
}
