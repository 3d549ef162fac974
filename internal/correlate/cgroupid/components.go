// Reading a path's components: kubepods roots, QoS and pod slices,
// container scopes by runtime.

package cgroupid

import "strings"

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
