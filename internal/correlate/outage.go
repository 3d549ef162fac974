package correlate

import (
	"sort"
	"strings"
	"time"
)

// Source outages. While the runtime or the API server is unreachable the
// model lacks their facts, and the spans of that time say so
// (podchron.degraded). An outage taints only the spans whose time range it
// overlaps: once the source is back, later phases are whole again, so a 2 s
// containerd restart does not mark every later span of every pod.

// outage is a time a source was unavailable; until is zero while it lasts.
type outage struct {
	reason      string
	from, until time.Time
}

// maxPastOutages bounds the ended outages kept (the oldest go first; a span
// older than all of them is long out).
const maxPastOutages = 64

// sourceDown records that a source became unavailable at since (the first
// failed attempt), for reason.
func (c *Correlator) sourceDown(source, reason string, since time.Time) {
	if since.IsZero() {
		since = c.now
	}
	if o := c.outages[source]; o != nil {
		if o.reason == reason {
			return
		}
		c.sourceUp(source, since)
	}
	c.outages[source] = &outage{reason: reason, from: since}
}

// sourceUp ends a source's outage at at.
func (c *Correlator) sourceUp(source string, at time.Time) {
	o := c.outages[source]
	if o == nil {
		return
	}
	delete(c.outages, source)
	if at.IsZero() {
		at = c.now
	}
	o.until = at
	c.pastOutages = append(c.pastOutages, *o)
	if n := len(c.pastOutages); n > maxPastOutages {
		c.pastOutages = append(c.pastOutages[:0:0], c.pastOutages[n-maxPastOutages:]...)
	}
}

// degradedDuring names the outages overlapping [from, to], sorted; empty if
// none.
func (c *Correlator) degradedDuring(from, to time.Time) string {
	if len(c.outages) == 0 && len(c.pastOutages) == 0 {
		return ""
	}
	if to.IsZero() || to.Before(from) {
		to = from
	}
	seen := map[string]bool{}
	for _, o := range c.outages {
		if !o.from.After(to) {
			seen[o.reason] = true
		}
	}
	for _, o := range c.pastOutages {
		if !o.from.After(to) && !o.until.Before(from) {
			seen[o.reason] = true
		}
	}
	if len(seen) == 0 {
		return ""
	}
	r := make([]string, 0, len(seen))
	for k := range seen {
		r = append(r, k)
	}
	sort.Strings(r)
	return strings.Join(r, "; ")
}
