// Timers: what is decided when waiting is over.

package correlate

import (
	"maps"
	"slices"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// tick runs timers: settling finished containers and start-ups, stuck
// terminations.
func (c *Correlator) tick() {
	c.settleAll()
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
		if p := c.pods[uid]; !p.startupDone && !p.startupSettle.IsZero() {
			c.maybeStarted(p)
		}
	}
	c.giveUpStartups()
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
		if p := c.pods[uid]; len(p.resandboxes) > 0 {
			c.emitResandboxes(p, false)
		}
	}
	c.expireEvents()
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
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
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
		if p := c.pods[uid]; !p.finished && !p.cgroupRemoved.IsZero() {
			c.maybeGone(p, p.cgroupRemoved) // waiting for its status (statusCaughtUp)
		}
	}
	for uid, p := range c.gone {
		if c.now.Sub(p.goneAt) > goneRetention {
			delete(c.gone, uid)
		}
	}
	c.expireEnded()
	for _, uid := range slices.Sorted(maps.Keys(c.pods)) {
		p := c.pods[uid]
		if p.stuck || p.deadline.IsZero() || p.finished {
			continue
		}
		if c.now.Sub(p.deadline) > c.cfg.StuckAfter {
			p.stuck = true
			p.addRootEvent(span.SpanEvent{Name: names.EventStuckTerminating, Time: c.now,
				Attrs: []span.Attr{span.Float(names.PastDeadlineSeconds, c.now.Sub(p.deadline).Seconds())}})
			c.stuckSpan(p)
			c.observer(p).StuckTerminating(p.namespace(), c.podRef(p), true)
		}
	}
	c.timed = c.timersArmed()
}

// Waiting reports whether the model waits on its clock: inputs held until
// the sources' progress passes them, or a phase whose end a timer decides
// soon (timersArmed). Only then does the model's clock need to follow the
// kernel closely: the pipeline checks a quiet kernel's progress often while
// the model waits, and at a slow pace otherwise, so an idle node's tracer
// sleeps.
func (c *Correlator) Waiting() bool { return c.Pending() > 0 || c.timed }

// timersArmed reports whether a timer decides a phase's end soon: a
// container or exec session settling, a start-up settling, a re-sandbox to
// emit, a pod terminating or deleted with its trace not finished. The long
// timers (a start-up given up after minutes, held Events, retention) do not
// count: a second more on them changes no span.
func (c *Correlator) timersArmed() bool {
	for _, p := range c.pods {
		if len(p.resandboxes) > 0 {
			return true
		}
		for _, ct := range p.containers {
			if ct.exited && !ct.finalized || len(ct.doneSessions) > 0 {
				return true
			}
		}
		if !p.finished && (!p.deadline.IsZero() || !p.apiGoneAt.IsZero() || !p.startupDone && !p.startupSettle.IsZero()) {
			return true
		}
	}
	return false
}

const timerEvery = 250 * time.Millisecond
