package correlate

import (
	"slices"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/correlate/cgroupid"
	"github.com/podchron/podchron/internal/names"
)

// Which limit an OOM kill ran out of, from the kernel's own counts
// (kernel.OOMEvent.Memcgs): the memory cgroup whose local OOM count grew is
// the one whose limit was hit. It is an ancestor of the victim, so its level
// names it within the victim container's cgroup path. The scopes are
// names.OOMScope*.

// maxMemcgCounts bounds the OOM counts remembered per memory cgroup; past
// it the memory is cleared (counted), and the next kill of a cgroup that
// had OOMs before is judged from zero.
const maxMemcgCounts = 4096

// One OOM invocation can kill many processes: with memory.oom.group=1 (the
// kubelet sets it on every container on cgroup v2) the kernel kills every
// process of the group. It counts the OOM once, on the cgroup whose limit
// ran out, but oom/mark_victim fires for each victim, so only the first
// victim sees a count grow. The others are recognised from the kernel's
// facts: the OOM killer kills the whole group in one call, in the context of
// the task that hit the limit, under the kernel's oom_lock (no other OOM
// kill in between); so a later victim of the same invocation comes with the
// same header task and the very same memory cgroups and counts (none grew),
// within oomGroupWindow of the previous victim, and lies inside the cgroup
// that ran out. A node-wide OOM right after runs in another task's context or
// reads other counts, or kills outside that cgroup: it stays node. (The one
// case the facts cannot tell apart: a task that hit a limit without being
// killed, running the node out of memory within the window, and the node's
// OOM killer choosing a victim inside that same cgroup; mark_victim carries
// no identity of the invocation.)

// oomGroupWindow bounds the kernel time between two victims of one
// invocation (the group is killed in one loop: microseconds apart).
const oomGroupWindow = time.Second

// oomInvocation is the last OOM kill whose limit was found; c.lastOOM.
type oomInvocation struct {
	tgid, pid    uint32 // the task in whose context the OOM killer ran
	at           time.Time
	memcgs       []kernel.MemcgOOMs
	scope, memcg string
	// container is the ID of the container whose own limit ran out (scope
	// container), "" otherwise: every victim of the invocation is in it.
	container string
}

// oomScope returns the scope of an OOM kill of a process of ct and the
// memory cgroup path whose limit ran out ("" for none or unknown).
//
// containerOOM: a container's OOM kills.
type containerOOM struct {
	oom        *kernel.OOMEvent // the OOM kill of the init, if it died of one
	oomScope   string           // OOMScope*
	oomMemcg   string           // the cgroup whose limit ran out
	ooms       []oomRec         // every OOM kill in the container (init or not), capped
	oomsFolded int
	// oomReasonTold: the kubelet's other reason for the init's OOM kill
	// was told (oom_reason.go).
	oomReasonTold bool
}

// The counts are compared with the last ones seen for the same cgroups; a
// cgroup not seen before counts from zero. That is exact for a container's
// cgroup (new with every run) and for any cgroup's first OOM kill; after a
// tracer restart, a cgroup that had OOM kills before it is taken for the one
// that ran out when a higher one did (the deepest grown count wins).
func (c *Correlator) oomScope(e *kernel.OOMEvent, ct *container) (string, string) {
	if len(e.Memcgs) == 0 {
		return names.OOMScopeUnknown, ""
	}
	if len(c.memcgOOMs)+len(e.Memcgs) > maxMemcgCounts {
		clear(c.memcgOOMs)
		c.miss(names.MissOOMCountsReset)
	}
	grown := -1
	for i, m := range e.Memcgs {
		if m.OOMs > c.memcgOOMs[m.ID] && grown < 0 {
			grown = i
		}
		c.memcgOOMs[m.ID] = m.OOMs
	}
	if grown < 0 {
		if scope, path, ok := c.oomGroupVictim(e, ct); ok {
			return scope, path
		}
		c.lastOOM = oomInvocation{}
		return names.OOMScopeNode, ""
	}
	scope, path := c.oomLimitScope(ct, int(e.Memcgs[grown].Level))
	c.lastOOM = oomInvocation{}
	if path != "" {
		c.lastOOM = oomInvocation{tgid: e.TGID, pid: e.PID, at: e.Time, memcgs: e.Memcgs, scope: scope, memcg: path}
		if scope == names.OOMScopeContainer {
			c.lastOOM.container = ct.id
		}
	}
	return scope, path
}

// sameOOMInvocation: e comes from the invocation of c.lastOOM (see
// oomGroupWindow): the same task the OOM killer runs in, the very same
// memory cgroups and counts, within the window.
func (c *Correlator) sameOOMInvocation(e *kernel.OOMEvent) bool {
	last := &c.lastOOM
	return last.memcg != "" && e.TGID == last.tgid && e.PID == last.pid && slices.Equal(e.Memcgs, last.memcgs) &&
		!e.Time.Before(last.at) && e.Time.Sub(last.at) <= oomGroupWindow
}

// oomGroupContainer is the container of a victim the model never saw (a
// process a container's init forked below it: the in-kernel filter reports
// only a container's process roots, and mark_victim names the victim's
// cgroup only when the victim is the task the OOM killer runs in), when e
// is a later victim of an invocation whose limit was a container's own:
// the kernel kills only inside the cgroup whose limit ran out, so every
// victim is that container's. nil otherwise (a pod's or the node's limit:
// the group may be in any container below it).
func (c *Correlator) oomGroupContainer(e *kernel.OOMEvent) *container {
	if c.lastOOM.container == "" || !c.sameOOMInvocation(e) {
		return nil
	}
	return c.containers[c.lastOOM.container]
}

// oomGroupVictim: the scope and memory cgroup of the previous victim when
// e is a later victim of the same OOM invocation (see oomGroupWindow).
func (c *Correlator) oomGroupVictim(e *kernel.OOMEvent, ct *container) (string, string, bool) {
	last := &c.lastOOM
	if !c.sameOOMInvocation(e) || !cgroupWithin(ct.cgroupPath, last.memcg) {
		return "", "", false
	}
	last.at = e.Time
	return last.scope, last.memcg, true
}

// oomWhere places an OOM kill whose victim no known container holds (the
// victim was dying already, so the OOM killer sent it no SIGKILL for the
// probes to read it from, or the two ran on different CPUs): the kernel
// kills only inside the memory cgroup that ran out, an ancestor of the task
// it ran in (the header's). When that cgroup is the task's container's,
// the victim is that container's: it is returned, with the scope and
// memory cgroup. When it is the task's pod's, the kill is that pod's but
// in which container is unknown: counted in the pod's namespace and told
// on the pod's root as a miss. Otherwise (a node-wide OOM, a limit above
// the pods) the victim may be no pod's: a miss only.
func (c *Correlator) oomWhere(e *kernel.OOMEvent) (*container, string, string) {
	cur := c.byCgroup(e.CgroupID)
	if cur == nil || cur.pod == nil {
		c.miss(names.MissOOMUnknownVictim)
		return nil, "", ""
	}
	scope, memcg := c.oomScope(e, cur)
	switch scope {
	case names.OOMScopeContainer:
		return cur, scope, memcg
	case names.OOMScopePod:
		c.missOn(cur.pod, names.MissOOMUnknownVictim, "")
		c.observer(cur.pod).OOMKill(cur.pod.namespace(), scope)
	default:
		c.miss(names.MissOOMUnknownVictim)
	}
	return nil, "", ""
}

// cgroupWithin: path is the cgroup at dir or one below it.
func cgroupWithin(path, dir string) bool {
	if path == "" {
		return false
	}
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}

// oomLimitScope is the scope of an OOM kill of a process of ct whose limit
// ran out at the given level of its cgroup path, and that cgroup's path.
func (c *Correlator) oomLimitScope(ct *container, level int) (string, string) {
	path := ancestorPath(ct.cgroupPath, level)
	if path == "" {
		// The victim's cgroup path is unknown (never seen) or shallower.
		return names.OOMScopeUnknown, ""
	}
	ident, err := c.parser.Parse(path)
	switch {
	case err == nil && ident.Kind == cgroupid.KindContainer:
		return names.OOMScopeContainer, path
	case err == nil && ident.Kind == cgroupid.KindPod:
		return names.OOMScopePod, path
	case err == nil && ident.Kind == cgroupid.KindPodsRoot:
		return names.OOMScopeNodeAllocatable, path
	}
	// Above the pods' cgroups (a system slice or a nesting runtime's cgroup
	// limiting the whole node, as in kind): the node's memory.
	return names.OOMScopeNode, path
}

// ancestorPath is the first level components of a cgroup path ("/" is level
// 0), or "" when the path is not that deep.
func ancestorPath(path string, level int) string {
	if path == "" {
		return ""
	}
	if level == 0 {
		return "/"
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if level > len(parts) {
		return ""
	}
	return "/" + strings.Join(parts[:level], "/")
}
