// Forgetting finished pods.

package correlate

import "time"

// forget drops a finished pod from the live indexes; it is kept in gone
// for goneRetention, so late facts about it join its trace instead of
// starting another.
func (c *Correlator) forget(p *pod) {
	c.gone[p.uid] = p
	c.bury(p)
	c.unindex(p)
}

// unindex drops a pod from the live indexes.
func (c *Correlator) unindex(p *pod) {
	delete(c.pods, p.uid)
	if p.sandboxID != "" {
		delete(c.bySandbox, p.sandboxID)
	}
	for _, ct := range p.containers {
		delete(c.containers, ct.id)
		for pid := range ct.pids {
			delete(c.procs, pid)
		}
		ct.pids = nil
	}
	for id, ref := range c.cgroups {
		if ref.ident.PodUID == p.uid {
			delete(c.cgroups, id)
		}
	}
}

// goneRetention is how long a finished pod is remembered (see Correlator.gone).
const goneRetention = 5 * time.Minute
