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
	// KindUnknown: not a (recognised) Kubernetes cgroup. Always paired with
	// a non-nil error from Parse.
	KindUnknown Kind = iota
	// KindPodsRoot: the kubepods root cgroup or one of its QoS children.
	KindPodsRoot
	// KindPod: a pod-level cgroup.
	KindPod
	// KindContainer: a container cgroup (or a cgroup below it, see Sub).
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
	// ErrNotKubernetes: the path contains no kubepods root and no
	// containerd literal form; typical for system services and user
	// sessions.
	ErrNotKubernetes = errors.New("cgroupid: not a kubernetes cgroup")
	// ErrMalformed: the input is not a usable path (empty, too long, "..")
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

// compEnd returns the end of the component of p starting at s.
func compEnd(p string, s int) int {
	if i := strings.IndexByte(p[s:], '/'); i >= 0 {
		return s + i
	}
	return len(p)
}

// matchRoot reports whether a kubepods root starts at component [s,e) of p
// and returns where it ends.
func (ps *Parser) matchRoot(p string, s, e int) (end int, systemd bool, prefix string, ok bool) {
	for i := range ps.roots {
		r := &ps.roots[i]
		if !strings.HasPrefix(p[s:], r.path) {
			continue
		}
		end := s + len(r.path)
		if end != len(p) && p[end] != '/' {
			continue
		}
		return end, r.systemd, r.prefix, true
	}
	c := p[s:e]
	if c == "kubepods" {
		return e, false, "", true
	}
	if stem, ok := strings.CutSuffix(c, ".slice"); ok && (stem == "kubepods" || strings.HasSuffix(stem, "-kubepods")) {
		return e, true, stem, true
	}
	return 0, false, "", false
}

// isSlicePrefix reports whether kp names a systemd kubepods slice (without
// ".slice"), i.e. is a valid prefix for QoS and pod slices.
func (ps *Parser) isSlicePrefix(kp string) bool {
	if kp == "kubepods" || strings.HasSuffix(kp, "-kubepods") {
		return true
	}
	for i := range ps.roots {
		if ps.roots[i].systemd && ps.roots[i].prefix == kp {
			return true
		}
	}
	return false
}

func qosOf(s string) string {
	switch s {
	case QoSBurstable:
		return QoSBurstable
	case QoSBestEffort:
		return QoSBestEffort
	}
	return ""
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
	s = e + 1
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

// cutSlice returns stem if c == prefix + "-" + stem + ".slice".
func cutSlice(c, prefix string) (string, bool) {
	stem, ok := strings.CutSuffix(c, ".slice")
	if !ok {
		return "", false
	}
	return cutWord(stem, prefix)
}

// cutWord returns rest if s == word + "-" + rest.
func cutWord(s, word string) (string, bool) {
	if len(s) <= len(word) || s[len(word)] != '-' || s[:len(word)] != word {
		return "", false
	}
	return s[len(word)+1:], true
}

// parseContainer parses a container cgroup name: [<prefix>-]<id>[.scope].
func parseContainer(c string) (runtime, id string, conmon, ok bool) {
	name := strings.TrimSuffix(c, ".scope")
	switch {
	case strings.HasPrefix(name, "cri-containerd-"):
		runtime, name = RuntimeContainerd, name[len("cri-containerd-"):]
	case strings.HasPrefix(name, "crio-conmon-"):
		runtime, name, conmon = RuntimeCRIO, name[len("crio-conmon-"):], true
	case strings.HasPrefix(name, "crio-"):
		runtime, name = RuntimeCRIO, name[len("crio-"):]
	case strings.HasPrefix(name, "docker-"):
		runtime, name = RuntimeDocker, name[len("docker-"):]
	}
	if !ValidContainerID(name) {
		return "", "", false, false
	}
	return runtime, name, conmon, true
}

// parseLiteral handles containerd's systemd cgroupsPath used verbatim as a
// cgroup name: "<kp>[-<qos>]-pod<uid_>.slice:<prefix>:<id>". done is false if
// the component does not look like that form at all (scanning continues).
func (ps *Parser) parseLiteral(res *result, s, e int) (done bool, err error) {
	p := res.p
	c := p[s:e]
	i := strings.IndexByte(c, ':')
	j := strings.IndexByte(c[i+1:], ':')
	if j < 0 {
		return false, nil
	}
	j += i + 1
	slice, prefix, name := c[:i], c[i+1:j], c[j+1:]
	stem, ok := strings.CutSuffix(slice, ".slice")
	if !ok {
		return false, nil
	}
	k := strings.LastIndex(stem, "-pod")
	if k < 0 {
		return false, nil
	}
	kp, uidPart := stem[:k], stem[k+len("-pod"):]
	qos := QoSGuaranteed
	if x, ok := strings.CutSuffix(kp, "-"+QoSBurstable); ok {
		kp, qos = x, QoSBurstable
	} else if x, ok := strings.CutSuffix(kp, "-"+QoSBestEffort); ok {
		kp, qos = x, QoSBestEffort
	}
	if !ps.isSlicePrefix(kp) {
		return false, nil
	}
	uid, hash, ok := parseUID(uidPart)
	if !ok {
		return true, malformed(p, "invalid pod UID in containerd cgroupsPath")
	}
	rt, ok := literalRuntime(prefix)
	if !ok {
		return true, malformed(p, "invalid prefix in containerd cgroupsPath")
	}
	if !ValidContainerID(name) {
		return true, malformed(p, "invalid container ID in containerd cgroupsPath")
	}
	res.id = Identity{
		Kind:          KindContainer,
		QoS:           qos,
		PodUID:        uid,
		ContainerID:   name,
		Runtime:       rt,
		Driver:        DriverSystemd,
		Root:          p[:s-1],
		Sub:           p[e:],
		ConfigHashUID: hash,
	}
	res.ctrEnd = e
	return true, nil
}

// literalRuntime maps the prefix of a "slice:prefix:name" cgroupsPath.
// Unknown prefixes made of [0-9a-z-] (at most 64 bytes) are accepted with an
// unknown runtime.
func literalRuntime(prefix string) (string, bool) {
	switch prefix {
	case "cri-containerd":
		return RuntimeContainerd, true
	case "crio":
		return RuntimeCRIO, true
	case "docker":
		return RuntimeDocker, true
	}
	if prefix == "" || len(prefix) > 64 {
		return "", false
	}
	for i := 0; i < len(prefix); i++ {
		if ch := prefix[i]; !(ch >= '0' && ch <= '9' || ch >= 'a' && ch <= 'z' || ch == '-') {
			return "", false
		}
	}
	return "", true
}

// ValidContainerID reports whether s is acceptable as a container ID:
// 1..MaxContainerIDLen bytes of [0-9a-z].
func ValidContainerID(s string) bool {
	if len(s) == 0 || len(s) > MaxContainerIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if charClass[s[i]]&classID == 0 {
			return false
		}
	}
	return true
}

const (
	classID       = 1 << iota // [0-9a-z]
	classLowerHex             // [0-9a-f]
	classHex                  // [0-9a-fA-F]
)

var charClass = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = classID | classLowerHex | classHex
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = classID
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] |= classLowerHex | classHex
		t[c-'a'+'A'] = classHex
	}
	return t
}()

// ValidPodUID reports whether s is a pod UID in the form Parse returns:
// lower-case hex 8-4-4-4-12 with dashes, or 32 lower-case hex digits (a
// static pod's config hash).
func ValidPodUID(s string) bool {
	switch len(s) {
	case 36:
		for i := 0; i < 36; i++ {
			if isDashPos(i) {
				if s[i] != '-' {
					return false
				}
			} else if !isLowerHex(s[i]) {
				return false
			}
		}
		return true
	case 32:
		for i := 0; i < 32; i++ {
			if !isLowerHex(s[i]) {
				return false
			}
		}
		return true
	}
	return false
}

func isDashPos(i int) bool { return i == 8 || i == 13 || i == 18 || i == 23 }

func isLowerHex(ch byte) bool { return charClass[ch]&classLowerHex != 0 }

func isHex(ch byte) bool { return charClass[ch]&classHex != 0 }

func lower(ch byte) byte {
	if ch >= 'A' && ch <= 'Z' {
		return ch + ('a' - 'A')
	}
	return ch
}

// parseUID parses the UID part of a pod cgroup name: 8-4-4-4-12 hex with
// '-' or '_' separators (the systemd driver escapes '-' as '_'), or 32 hex
// digits (config hash). Upper-case hex is accepted and lower-cased. The
// result allocates only when it differs from the input.
func parseUID(s string) (uid string, hash, ok bool) {
	switch len(s) {
	case 36:
		rewrite := false
		for i := 0; i < 36; i++ {
			ch := s[i]
			if isDashPos(i) {
				if ch == '_' {
					rewrite = true
				} else if ch != '-' {
					return "", false, false
				}
			} else if !isLowerHex(ch) {
				if !isHex(ch) {
					return "", false, false
				}
				rewrite = true
			}
		}
		if !rewrite {
			return s, false, true
		}
		var b [36]byte
		for i := 0; i < 36; i++ {
			if isDashPos(i) {
				b[i] = '-'
			} else {
				b[i] = lower(s[i])
			}
		}
		return string(b[:]), false, true
	case 32:
		rewrite := false
		for i := 0; i < 32; i++ {
			if !isLowerHex(s[i]) {
				if !isHex(s[i]) {
					return "", false, false
				}
				rewrite = true
			}
		}
		if !rewrite {
			return s, true, true
		}
		var b [32]byte
		for i := 0; i < 32; i++ {
			b[i] = lower(s[i])
		}
		return string(b[:]), true, true
	}
	return "", false, false
}

// normalize cuts path at the first NUL, bounds its length, cleans it and
// strips a cgroupfs mount prefix. The result starts with "/" and has no empty,
// "." or ".." components and no trailing slash (unless it is "/").
func normalize(path string) (string, error) {
	if i := strings.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	if len(path) > MaxPathLen {
		return "", malformed(path, "path longer than MaxPathLen")
	}
	p, err := cleanPath(path)
	if err != nil {
		return "", err
	}
	return stripMount(p), nil
}

// cleanPath returns path in clean form (see normalize); it allocates only if
// path is not already clean.
func cleanPath(path string) (string, error) {
	if path == "" {
		return "", malformed(path, "empty path")
	}
	if isClean(path) {
		return path, nil
	}
	var b strings.Builder
	b.Grow(len(path) + 1)
	for s := 0; s <= len(path); {
		e := strings.IndexByte(path[s:], '/')
		if e < 0 {
			e = len(path)
		} else {
			e += s
		}
		switch c := path[s:e]; c {
		case "", ".":
		case "..":
			return "", malformed(path, `".." in path`)
		default:
			b.WriteByte('/')
			b.WriteString(c)
		}
		s = e + 1
	}
	if b.Len() == 0 {
		return "/", nil
	}
	return b.String(), nil
}

func isClean(p string) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	if len(p) == 1 {
		return true
	}
	for s := 1; ; {
		i := strings.IndexByte(p[s:], '/')
		c := p[s:]
		if i >= 0 {
			c = p[s : s+i]
		}
		if c == "" || c == "." || c == ".." {
			return false
		}
		if i < 0 {
			return true
		}
		s += i + 1
	}
}

const mountPrefix = "/sys/fs/cgroup"

// stripMount removes /sys/fs/cgroup and a following hierarchy directory
// (unified, systemd, name=..., a v1 controller list) from a clean path.
func stripMount(p string) string {
	rest, ok := strings.CutPrefix(p, mountPrefix)
	if !ok || (rest != "" && rest[0] != '/') {
		return p
	}
	if rest == "" {
		return "/"
	}
	if e := compEnd(rest, 1); isMountDir(rest[1:e]) {
		rest = rest[e:]
	}
	if rest == "" {
		return "/"
	}
	return rest
}

func isMountDir(c string) bool {
	if c == "" {
		return false
	}
	if c == "unified" || c == "systemd" || strings.HasPrefix(c, "name=") {
		return true
	}
	for c != "" {
		var ctl string
		ctl, c, _ = strings.Cut(c, ",")
		switch ctl {
		case "blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "hugetlb",
			"memory", "net_cls", "net_prio", "perf_event", "pids", "rdma", "misc", "debug":
		default:
			return false
		}
	}
	return true
}
