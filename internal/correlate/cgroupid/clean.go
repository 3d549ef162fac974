// Normalizing a path before parsing: cleaning it, and taking off where the
// cgroup filesystem is mounted.

package cgroupid

import "strings"

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
