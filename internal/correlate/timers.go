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
}

const timerEvery = 250 * time.Millisecond
