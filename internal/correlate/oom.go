package correlate

import (
	"strings"

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
		c.miss("oom_counts_reset")
	}
	grown := -1
	for i, m := range e.Memcgs {
		if m.OOMs > c.memcgOOMs[m.ID] && grown < 0 {
			grown = i
		}
		c.memcgOOMs[m.ID] = m.OOMs
	}
	if grown < 0 {
		return names.OOMScopeNode, ""
	}
	level := int(e.Memcgs[grown].Level)
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
