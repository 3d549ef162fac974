// Splitting a recorded stream by pod namespace: one node's recording holds
// every pod's facts; a scenario's (or a bug report's) is one namespace's.

package record

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/kernel"
)

// SplitByNamespace splits a recorded stream into one stream per pod
// namespace. Each holds, in the original order:
//   - the facts about that namespace's pods: the API server's pods and
//     Events, the runtime's sandboxes and containers, the cgroups whose
//     path names one of its pods (pod<UID>), the kernel facts in those
//     cgroups or sent into them (signals, OOM kills), the CNI runs for its
//     sandboxes, and the processes outside them that act on them (a
//     runtime process whose command line names one of its sandboxes or
//     containers, and what it forks);
//   - the facts about no pod (Start, Progress, API reachability, runtime
//     outages, ticks, ring-buffer losses) until tail after the namespace's
//     last fact, so that its timers run out as they did; but not the ticks
//     before its first fact (no timer of its own runs then), and of the
//     Progress facts between two facts of the namespace only the last of
//     each source (a source's later watermark says all an earlier one
//     does).
//
// Facts about no namespace it can tell (a process of the host's that never
// names a pod) are in no stream. The split streams are what a tracer on a
// node running only that namespace's pods would have taken in, as far as
// the facts tell; they are not checked to give the same spans as the whole
// stream.
func SplitByNamespace(in []fact.Input, tail time.Duration) map[string][]fact.Input {
	s := newSplitter(in)
	owner := make([]string, len(in)) // "" : about no pod; "-": about a pod of no known namespace
	last := map[string]time.Time{}
	for i, x := range in {
		owner[i] = s.owner(x)
		if owner[i] != "" && owner[i] != "-" {
			last[owner[i]] = x.Time
		}
	}
	out := map[string][]fact.Input{}
	for ns, end := range last {
		keep := keepGlobals(in, owner, ns, end.Add(tail))
		var st []fact.Input
		for i, x := range in {
			switch {
			case owner[i] == ns:
				st = append(st, x)
			case keep[i]:
				if y, ok := s.onlyNamespace(x, ns); ok {
					st = append(st, y)
				}
			}
		}
		out[ns] = st
	}
	return out
}

// keepGlobals marks the facts about no pod that ns's stream keeps (see
// SplitByNamespace): scanning backwards, a Progress is dropped when a later
// one of its source comes before ns's next fact.
func keepGlobals(in []fact.Input, owner []string, ns string, until time.Time) []bool {
	keep := make([]bool, len(in))
	later := map[string]bool{}
	first := len(in)
	for i := len(in) - 1; i >= 0; i-- {
		x := in[i]
		switch {
		case owner[i] == ns:
			clear(later)
			first = i
		case owner[i] != "" || x.Time.After(until):
		case x.Progress != nil:
			keep[i] = !later[x.Progress.Source]
			later[x.Progress.Source] = true
		default:
			keep[i] = true
		}
	}
	for i := 0; i < first; i++ {
		if in[i].Tick {
			keep[i] = false
		}
	}
	return keep
}

// podUIDInPath finds a pod UID in a kubelet cgroup path: cgroupfs
// (/kubepods/burstable/pod<uid>/<id>) or systemd
// (kubepods-burstable-pod<uid with _>.slice).
var podUIDInPath = regexp.MustCompile(`pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})`)

type splitter struct {
	byUID    map[string]string // pod UID -> namespace
	byID     map[string]string // sandbox or container ID -> namespace
	byCgroup map[uint64]string // cgroup ID -> namespace
	paths    map[uint64]string // cgroup ID -> path, until its namespace is known
	byPID    map[uint32]string // process -> namespace (as the stream goes)
}

// newSplitter learns from the whole stream which pod UIDs, sandbox and
// container IDs belong to which namespace.
func newSplitter(in []fact.Input) *splitter {
	s := &splitter{byUID: map[string]string{}, byID: map[string]string{}, byCgroup: map[uint64]string{},
		paths: map[uint64]string{}, byPID: map[uint32]string{}}
	for _, x := range in {
		switch {
		case x.Pod != nil:
			s.byUID[x.Pod.UID] = x.Pod.Namespace
		case x.Event != nil && x.Event.PodUID != "":
			s.byUID[x.Event.PodUID] = x.Event.Namespace
		case x.Runtime != nil:
			if sb := x.Runtime.Sandbox; sb != nil && sb.PodNamespace != "" {
				s.byID[sb.ID], s.byUID[sb.PodUID] = sb.PodNamespace, sb.PodNamespace
			}
			if c := x.Runtime.Container; c != nil && c.PodNamespace != "" {
				s.byID[c.ID], s.byUID[c.PodUID] = c.PodNamespace, c.PodNamespace
				if c.SandboxID != "" {
					s.byID[c.SandboxID] = c.PodNamespace
				}
			}
		case x.Cgroup != nil:
			s.paths[x.Cgroup.ID] = x.Cgroup.Path
		}
		if e, ok := x.Kernel.(*kernel.CgroupEvent); ok && e.Type == kernel.EventCgroupMkdir {
			s.paths[e.ID] = e.Path
		}
		if e, ok := x.Kernel.(*kernel.ExecEvent); ok && e.CNI != nil && e.CNI.PodNamespace != "" {
			s.byUID[e.CNI.PodUID] = e.CNI.PodNamespace
		}
	}
	for id, p := range s.paths {
		if ns := s.pathNamespace(p); ns != "" {
			s.byCgroup[id] = ns
		}
	}
	return s
}

func (s *splitter) pathNamespace(p string) string {
	if m := podUIDInPath.FindStringSubmatch(p); m != nil {
		if ns := s.byUID[strings.ReplaceAll(m[1], "_", "-")]; ns != "" {
			return ns
		}
	}
	// A container's own cgroup under a pod's names its ID last
	// (<id>, cri-containerd-<id>.scope, crio-<id>.scope).
	base := p[strings.LastIndexByte(p, '/')+1:]
	base = strings.TrimSuffix(base, ".scope")
	if i := strings.LastIndexByte(base, '-'); i >= 0 {
		base = base[i+1:]
	}
	return s.byID[base]
}

// owner is the namespace an input is about: "" when it is about no pod,
// "-" when it is about something whose namespace is not known.
func (s *splitter) owner(x fact.Input) string {
	switch {
	case x.Pod != nil:
		return x.Pod.Namespace
	case x.Event != nil:
		return orUnknown(s.byUID[x.Event.PodUID])
	case x.Endpoint != nil:
		return x.Endpoint.Namespace
	case x.Runtime != nil:
		return s.runtimeOwner(x)
	case x.Cgroup != nil:
		return orUnknown(s.byCgroup[x.Cgroup.ID])
	case x.Proc != nil:
		ns := s.byCgroup[x.Proc.CgroupID]
		if ns != "" {
			s.byPID[x.Proc.PID] = ns
		}
		return orUnknown(ns)
	case x.Kernel != nil:
		return orUnknown(s.kernelOwner(x.Kernel))
	}
	return ""
}

func (s *splitter) runtimeOwner(x fact.Input) string {
	r := x.Runtime
	switch {
	case r.Container != nil:
		return orUnknown(firstNonEmpty(r.Container.PodNamespace, s.byID[r.Container.ID], s.byID[r.Container.SandboxID]))
	case r.Sandbox != nil:
		return orUnknown(firstNonEmpty(r.Sandbox.PodNamespace, s.byID[r.Sandbox.ID]))
	}
	return "" // the runtime's reachability
}

// kernelOwner attributes a kernel fact by its cgroups, then by its process.
func (s *splitter) kernelOwner(k kernel.Event) string {
	h := k.Hdr()
	ns := s.byCgroup[h.CgroupID]
	switch e := k.(type) {
	case *kernel.SignalEvent:
		ns = firstNonEmpty(s.byCgroup[e.TargetCgroupID], ns)
	case *kernel.OOMEvent:
		ns = firstNonEmpty(s.byCgroup[e.VictimCgroupID], ns)
	case *kernel.CgroupEvent:
		ns = firstNonEmpty(s.byCgroup[e.ID], ns)
	case *kernel.ExecEvent:
		if ns == "" {
			ns = s.execOwner(e)
		}
	}
	if ns == "" {
		ns = s.byPID[h.TGID]
	}
	if ns == "" {
		return ""
	}
	switch e := k.(type) {
	case *kernel.ExecEvent:
		s.byPID[h.TGID] = ns
	case *kernel.ForkEvent:
		s.byPID[e.ChildTGID] = ns
	case *kernel.ExitEvent:
		delete(s.byPID, h.TGID)
	}
	return ns
}

// execOwner: a process outside the pods' cgroups that names a pod's
// sandbox or container (a CNI plugin, the OCI runtime).
func (s *splitter) execOwner(e *kernel.ExecEvent) string {
	if e.CNI != nil {
		if ns := firstNonEmpty(e.CNI.PodNamespace, s.byID[e.CNI.ContainerID], s.byID[e.CNI.InfraContainerID]); ns != "" {
			return ns
		}
	}
	for _, a := range e.Args {
		for _, part := range strings.FieldsFunc(a, func(r rune) bool { return r == '/' || r == '=' || r == ':' }) {
			if ns := s.byID[part]; ns != "" {
				return ns
			}
		}
	}
	return ""
}

// onlyNamespace keeps, of a fact about no pod, what concerns ns: of a
// loss record, the ring buffer's losses and the per-cgroup counts of ns's
// cgroups (false: nothing is left).
func (s *splitter) onlyNamespace(x fact.Input, ns string) (fact.Input, bool) {
	if x.Losses == nil || len(x.Losses.Throttled) == 0 {
		return x, true
	}
	l := *x.Losses
	l.Throttled = nil
	for _, c := range x.Losses.Throttled {
		if s.byCgroup[c.CgroupID] == ns {
			l.Throttled = append(l.Throttled, c)
		}
	}
	x.Losses = &l
	return x, l.Lost > 0 || len(l.Throttled) > 0
}

func orUnknown(ns string) string {
	if ns == "" {
		return "-"
	}
	return ns
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// DropNamespaces returns the stream without the facts about the pods of
// the given namespaces (as SplitByNamespace attributes them): a recording
// made on a node shared with other work (another runtime's pods whose CNI
// runs reached the recorder) is kept to the namespaces it was made for.
func DropNamespaces(in []fact.Input, drop ...string) []fact.Input {
	s := newSplitter(in)
	out := make([]fact.Input, 0, len(in))
	for _, x := range in {
		if slices.Contains(drop, s.owner(x)) {
			continue
		}
		out = append(out, x)
	}
	return out
}
