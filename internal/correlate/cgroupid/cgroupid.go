// Package cgroupid derives Kubernetes pod and container identity from cgroup
// paths.
//
// The input is a cgroup path as the kernel reports it: relative to the
// hierarchy root and starting with "/" (/proc/<pid>/cgroup, the cgroup_mkdir
// and cgroup_rmdir tracepoints), or an absolute cgroupfs path such as
// /sys/fs/cgroup/kubepods.slice/... or /sys/fs/cgroup/memory/kubepods/...; the
// mount prefix (/sys/fs/cgroup, optionally followed by "unified", "systemd",
// "name=<x>" or a v1 controller list like "cpu,cpuacct") is stripped.
//
// Recognised layouts (all produced by real kubelet / container runtime
// combinations):
//
//	cgroupfs driver  /kubepods[/burstable|/besteffort]/pod<uid>/<id>
//	                 (CRI-O in cgroupfs mode names containers crio-<id>)
//	systemd driver   /kubepods.slice[/kubepods-<qos>.slice]/kubepods[-<qos>]-pod<uid_>.slice/<prefix>-<id>.scope
//	                 prefix: cri-containerd, crio, crio-conmon, docker (docker and cri-dockerd)
//	nested roots     /kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-<qos>.slice/... (kind, k3d)
//	                 /docker/<hostid>/kubepods/... and any other prefix before the kubepods root
//	containerd       .../kubepods-<qos>-pod<uid_>.slice:cri-containerd:<id> (containerd's
//	"slice:prefix:name" cgroupsPath appearing as a literal cgroup name)
//	custom roots     NewParser("podchron-test-abc") recognises /podchron-test-abc/burstable/pod<uid>/<id>
//
// Anything below the container cgroup (cgroups created by the workload, crun's
// "container" sub-cgroup, ...) is reported in Identity.Sub.
//
// Parse does work linear in the length of its input, never panics, and
// rejects inputs longer than MaxPathLen. Common paths parse without allocating
// (cgroupfs) or with a single allocation (systemd: the pod UID has to be
// rewritten from '_' to '-').
package cgroupid

import (
	"errors"
	"strconv"
	"strings"
)

// Kind is the level of the Kubernetes cgroup hierarchy a path designates.
type Kind uint8

const (
	// KindUnknown means not a (recognised) Kubernetes cgroup. Always paired with
	// a non-nil error from Parse.
	KindUnknown Kind = iota
	// KindPodsRoot means the kubepods root cgroup or one of its QoS children.
	KindPodsRoot
	// KindPod means a pod-level cgroup.
	KindPod
	// KindContainer means a container cgroup (or a cgroup below it, see Sub).
	KindContainer
)

func (k Kind) String() string {
	switch k {
	case KindPodsRoot:
		return "pods-root"
	case KindPod:
		return "pod"
	case KindContainer:
		return "container"
	default:
		return "unknown"
	}
}

// QoS classes, runtimes and cgroup drivers as reported in Identity.
const (
	QoSGuaranteed = "guaranteed"
	QoSBurstable  = "burstable"
	QoSBestEffort = "besteffort"

	RuntimeContainerd = "containerd"
	RuntimeCRIO       = "crio"
	RuntimeDocker     = "docker" // docker-<id>.scope: dockershim and cri-dockerd

	DriverSystemd  = "systemd"
	DriverCgroupfs = "cgroupfs"
)

// MaxPathLen bounds the accepted input (after cutting at the first NUL).
// Longer inputs are rejected with ErrMalformed. It is PATH_MAX; the kernel's
// cgroup tracepoints truncate paths to 1024 bytes anyway.
const MaxPathLen = 4096

// MaxContainerIDLen bounds the accepted container ID length.
const MaxContainerIDLen = 128

// Identity is what a cgroup path says about the pod/container it belongs to.
// All fields are comparable, so identities can be compared with ==.
type Identity struct {
	Kind Kind
	// QoS is QoSGuaranteed, QoSBurstable or QoSBestEffort; "" for the
	// kubepods root itself.
	QoS string
	// PodUID is lower-case, canonical 8-4-4-4-12 with dashes (the systemd
	// driver's '_' escaping is undone). Static pods whose UID is the
	// kubelet's 32-hex-digit config hash keep that form; ConfigHashUID is
	// set for them.
	PodUID string
	// ContainerID as named by the runtime (1..MaxContainerIDLen of
	// [0-9a-z], 64 hex digits for containerd, CRI-O and docker).
	ContainerID string
	// Runtime is RuntimeContainerd, RuntimeCRIO, RuntimeDocker, or "" when
	// the layout does not say (the cgroupfs layout names containers by bare
	// ID).
	Runtime string
	// Driver is DriverSystemd or DriverCgroupfs.
	Driver string
	// Root is the hierarchy-relative path of the kubepods root cgroup, e.g.
	// "/kubepods", "/kubepods.slice", "/kubelet.slice/kubelet-kubepods.slice",
	// "/docker/<hostid>/kubepods", "/podchron-test-abc". For the containerd
	// "slice:prefix:id" literal form, which has no kubepods root cgroup,
	// Root is the parent of the literal cgroup, e.g.
	// "/system.slice/containerd.service" (or "" at the top level).
	Root string
	// Sub is the part of the path below the container cgroup, starting with
	// "/", e.g. "/container" or "/app/worker"; "" if none.
	Sub string
	// Conmon is set for CRI-O's crio-conmon-<id> cgroups, which hold the
	// conmon monitor process of container <id>, not the container itself.
	Conmon bool
	// ConfigHashUID is set when PodUID is a 32-hex-digit config hash
	// (static/mirror pods defined by a file or URL) rather than a dashed UID.
	ConfigHashUID bool
}

var (
	// ErrNotKubernetes means the path contains no kubepods root and no
	// containerd literal form; typical for system services and user
	// sessions.
	ErrNotKubernetes = errors.New("cgroupid: not a kubernetes cgroup")
	// ErrMalformed means the input is not a usable path (empty, too long, "..")
	// or it is below a kubepods root but has a shape Parse does not know.
	// Errors wrapping it are *ParseError.
	ErrMalformed = errors.New("cgroupid: malformed cgroup path")
	// ErrNoAncestor is returned by Ancestor when the path has no cgroup at
	// the requested level (e.g. the pod cgroup of a pod-less literal form, or
	// the container cgroup of a pod-level path).
	ErrNoAncestor = errors.New("cgroupid: no ancestor at requested level")
)

// ParseError describes a malformed path. It unwraps to ErrMalformed.
type ParseError struct {
	Path   string // the offending input, truncated to 256 bytes
	Reason string
}

func (e *ParseError) Error() string {
	return ErrMalformed.Error() + ": " + e.Reason + ": " + strconv.Quote(e.Path)
}

func (e *ParseError) Unwrap() error { return ErrMalformed }

func malformed(path, reason string) error {
	if len(path) > 256 {
		path = path[:256]
	}
	return &ParseError{Path: path, Reason: reason}
}

// Parser parses cgroup paths. Its zero value and NewParser() recognise the
// standard kubepods roots; NewParser can add custom root names. A Parser is
// immutable and safe for concurrent use.
type Parser struct {
	roots []customRoot
}

type customRoot struct {
	path    string // cleaned, no leading "/", may contain "/"
	systemd bool   // last component ends in ".slice"
	prefix  string // systemd: last component without ".slice"
}

var defaultParser = &Parser{}

// NewParser returns a Parser that, in addition to "kubepods" (cgroupfs) and
// "kubepods.slice" / "*-kubepods.slice" (systemd), recognises each of roots as
// a kubepods root cgroup. A root is a cgroup name ("podchron-test-abc") or a
// path of several components ("/ci/kubepods-x"); it matches wherever its
// components appear in a path, like "kubepods" does. A root whose last
// component ends in ".slice" uses the systemd naming (custom.slice →
// custom-burstable.slice, custom-burstable-pod<uid_>.slice). Roots are
// normalised like paths (a /sys/fs/cgroup prefix is dropped); roots that are
// empty, "/" or contain ".." are ignored.
func NewParser(roots ...string) *Parser {
	ps := &Parser{}
	for _, r := range roots {
		c, err := normalize(r)
		if err != nil || c == "/" {
			continue
		}
		cr := customRoot{path: c[1:]}
		last := cr.path[strings.LastIndexByte(cr.path, '/')+1:]
		if stem, ok := strings.CutSuffix(last, ".slice"); ok && stem != "" {
			cr.systemd, cr.prefix = true, stem
		}
		ps.roots = append(ps.roots, cr)
	}
	return ps
}

// Parse parses path with the default Parser.
func Parse(path string) (Identity, error) { return defaultParser.Parse(path) }

// Ancestor calls Parser.Ancestor on the default Parser.
func Ancestor(path string, level Kind) (string, Identity, error) {
	return defaultParser.Ancestor(path, level)
}

// Parse maps a cgroup path to the Kubernetes identity it encodes. On error
// the Identity is zero (KindUnknown) and the error is ErrNotKubernetes or
// wraps ErrMalformed (test with errors.Is).
//
// The path is cut at the first NUL (BPF buffers), cleaned (repeated and
// trailing slashes, "." components; ".." is rejected because the kernel never
// produces it except for paths outside the reader's cgroup namespace) and
// stripped of a /sys/fs/cgroup mount prefix. The first kubepods root found
// from the left wins, so a cluster nested inside a container (kind, k3d) is
// attributed to the outer pod, with the inner hierarchy in Sub.
func (ps *Parser) Parse(path string) (Identity, error) {
	r, err := ps.parse(path)
	if err != nil {
		return Identity{}, err
	}
	return r.id, nil
}

// Ancestor returns the normalised (mount-prefix-free) path of the cgroup at
// the given level above or at path, with the identity of path itself: for
// level KindContainer the container cgroup (path without Identity.Sub), for
// KindPod the pod cgroup, for KindPodsRoot the kubepods root. It returns
// ErrNoAncestor if path has no cgroup at that level.
func (ps *Parser) Ancestor(path string, level Kind) (string, Identity, error) {
	r, err := ps.parse(path)
	if err != nil {
		return "", Identity{}, err
	}
	end := -1
	switch level {
	case KindPodsRoot:
		end = r.rootEnd
	case KindPod:
		end = r.podEnd
	case KindContainer:
		end = r.ctrEnd
	}
	if end < 0 {
		return "", r.id, ErrNoAncestor
	}
	return r.p[:end], r.id, nil
}

type result struct {
	id                      Identity
	p                       string // normalised path
	rootEnd, podEnd, ctrEnd int    // end offsets in p of each level, -1 if absent
}

func (ps *Parser) parse(path string) (result, error) {
	res := result{rootEnd: -1, podEnd: -1, ctrEnd: -1}
	p, err := normalize(path)
	if err != nil {
		return res, err
	}
	res.p = p
	for s := 1; s < len(p); {
		e := compEnd(p, s)
		if end, systemd, prefix, ok := ps.matchRoot(p, s, e); ok {
			err := ps.parseBelowRoot(&res, end, systemd, prefix)
			return res, err
		}
		if strings.IndexByte(p[s:e], ':') >= 0 {
			if done, err := ps.parseLiteral(&res, s, e); done {
				return res, err
			}
		}
		s = e + 1
	}
	return res, ErrNotKubernetes
}

// parseBelowRoot parses the components after the kubepods root ending at
// rootEnd.
func (ps *Parser) parseBelowRoot(res *result, rootEnd int, systemd bool, prefix string) error {
	p := res.p
	id := &res.id
	id.Kind = KindPodsRoot
	id.Root = p[:rootEnd]
	id.Driver = DriverCgroupfs
	if systemd {
		id.Driver = DriverSystemd
	}
	res.rootEnd = rootEnd
	if rootEnd == len(p) {
		return nil
	}

	// QoS level (optional; guaranteed pods sit directly below the root).
	s := rootEnd + 1
	e := compEnd(p, s)
	c := p[s:e]
	var podName string // "pod<uid>"
	if systemd {
		stem, ok := cutSlice(c, prefix)
		if !ok {
			return malformed(p, "unexpected cgroup below kubepods slice")
		}
		if q := qosOf(stem); q != "" {
			id.QoS = q
			if e == len(p) {
				return nil
			}
			s = e + 1
			e = compEnd(p, s)
			c = p[s:e]
			stem, ok = cutSlice(c, prefix)
			if ok {
				stem, ok = cutWord(stem, q)
			}
			if !ok {
				return malformed(p, "unexpected cgroup below QoS slice")
			}
		}
		podName = stem
	} else {
		if q := qosOf(c); q != "" {
			id.QoS = q
			if e == len(p) {
				return nil
			}
			s = e + 1
			e = compEnd(p, s)
			c = p[s:e]
		}
		podName = c
	}

	return parsePod(res, podName, e)
}

// parsePod parses the pod component ("pod<uid>", ending at e) and the
// container below it, if any.
func parsePod(res *result, podName string, e int) error {
	p := res.p
	id := &res.id
	// Pod level.
	uidPart, ok := strings.CutPrefix(podName, "pod")
	if !ok {
		return malformed(p, "expected pod cgroup")
	}
	uid, hash, ok := parseUID(uidPart)
	if !ok {
		return malformed(p, "invalid pod UID")
	}
	id.Kind = KindPod
	if id.QoS == "" {
		id.QoS = QoSGuaranteed
	}
	id.PodUID, id.ConfigHashUID = uid, hash
	res.podEnd = e
	if e == len(p) {
		return nil
	}

	// Container level.
	s := e + 1
	e = compEnd(p, s)
	rt, cid, conmon, ok := parseContainer(p[s:e])
	if !ok {
		return malformed(p, "unexpected cgroup below pod cgroup")
	}
	id.Kind = KindContainer
	id.Runtime, id.ContainerID, id.Conmon = rt, cid, conmon
	id.Sub = p[e:]
	res.ctrEnd = e
	return nil
}
