package cgroupid

import (
	"bytes"
	"errors"
	"strings"
)

// MaxProcCgroupLen bounds the input of ParseProcCgroup. Real files are a few
// hundred bytes (one line per hierarchy).
const MaxProcCgroupLen = 64 << 10

// ProcCgroup is the content of /proc/<pid>/cgroup.
//
// Pure cgroup v2 hosts have only the unified line ("0::/path"); v1 hosts have
// one line per hierarchy ("12:memory:/path"); hybrid hosts have both, and
// their unified path need not agree with the v1 ones (with the cgroupfs
// driver the runtime may leave the process in the unified hierarchy's
// service cgroup). Use Parser.Choose to pick the one carrying the
// Kubernetes identity.
type ProcCgroup struct {
	// Unified is the path of the "0::" line, valid if HasUnified.
	Unified    string
	HasUnified bool
	// UnifiedDeleted is set if the kernel marked the unified cgroup
	// " (deleted)" (the process is a zombie in a removed cgroup); the
	// suffix is not part of Unified.
	UnifiedDeleted bool
	// Memory is the v1 memory controller path, valid if HasMemory.
	Memory    string
	HasMemory bool
	// V1 maps every v1 controller (and named hierarchy, e.g.
	// "name=systemd") to its path; nil on pure v2 hosts.
	V1 map[string]string
}

const deletedSuffix = " (deleted)"

// ParseProcCgroup parses the content of /proc/<pid>/cgroup. Lines are
// "hierarchy-ID:controller-list:path"; the path may itself contain ':'. A
// line that does not have that shape (fewer than two ':', non-numeric
// hierarchy ID) makes the whole input malformed (ErrMalformed), as does an
// input with no usable line or longer than MaxProcCgroupLen; a v1 line with an
// empty controller list is ignored. For duplicated hierarchies the first line wins.
func ParseProcCgroup(content []byte) (ProcCgroup, error) {
	var pc ProcCgroup
	if len(content) > MaxProcCgroupLen {
		return pc, malformed(string(content[:256]), "/proc/<pid>/cgroup content too long")
	}
	usable := false
	for len(content) > 0 {
		var line []byte
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			line, content = content[:i], content[i+1:]
		} else {
			line, content = content, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			continue
		}
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			return ProcCgroup{}, malformed(string(line), "/proc/<pid>/cgroup line without ':'")
		}
		j := bytes.IndexByte(line[i+1:], ':')
		if j < 0 {
			return ProcCgroup{}, malformed(string(line), "/proc/<pid>/cgroup line with one ':'")
		}
		j += i + 1
		hid, ctls, path := line[:i], line[i+1:j], line[j+1:]
		if len(hid) == 0 || len(hid) > 10 || !allDigits(hid) {
			return ProcCgroup{}, malformed(string(line), "/proc/<pid>/cgroup line with bad hierarchy ID")
		}
		deleted := false
		if bytes.HasSuffix(path, []byte(deletedSuffix)) {
			path, deleted = path[:len(path)-len(deletedSuffix)], true
		}
		if len(ctls) == 0 {
			if string(hid) != "0" {
				continue // not produced by Linux; ignore rather than fail
			}
			usable = true
			if !pc.HasUnified {
				pc.Unified, pc.HasUnified, pc.UnifiedDeleted = string(path), true, deleted
			}
			continue
		}
		p := string(path)
		for rest := string(ctls); rest != ""; {
			var ctl string
			ctl, rest, _ = strings.Cut(rest, ",")
			if ctl == "" {
				continue // "0:,:/x" – ignore like an empty list
			}
			if pc.V1 == nil {
				usable = true
				pc.V1 = make(map[string]string, 16)
			}
			if _, dup := pc.V1[ctl]; !dup {
				pc.V1[ctl] = p
			}
			if ctl == "memory" && !pc.HasMemory {
				pc.Memory, pc.HasMemory = p, true
			}
		}
	}
	if !usable {
		return ProcCgroup{}, malformed("", "no usable line in /proc/<pid>/cgroup")
	}
	return pc, nil
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Choose calls Parser.Choose on the default Parser.
func Choose(pc ProcCgroup) (string, Identity, error) { return defaultParser.Choose(pc) }

// Choose picks the path of pc that identifies the process's pod/container:
// the unified (v2) path if it parses as a Kubernetes cgroup — it is the
// hierarchy whose cgroup ID bpf_get_current_cgroup_id() reports — otherwise
// the v1 memory path if that parses. If neither parses, it returns the
// unified path (or the memory path on v1-only hosts) with the most specific
// error: one wrapping ErrMalformed if either path was malformed, else
// ErrNotKubernetes.
func (ps *Parser) Choose(pc ProcCgroup) (string, Identity, error) {
	var (
		fallback string
		have     bool
		firstErr error
	)
	try := func(path string) (Identity, bool) {
		id, err := ps.Parse(path)
		if err == nil {
			return id, true
		}
		if !have {
			fallback, have = path, true
		}
		if firstErr == nil || (errors.Is(firstErr, ErrNotKubernetes) && !errors.Is(err, ErrNotKubernetes)) {
			firstErr = err
		}
		return Identity{}, false
	}
	if pc.HasUnified {
		if id, ok := try(pc.Unified); ok {
			return pc.Unified, id, nil
		}
	}
	if pc.HasMemory {
		if id, ok := try(pc.Memory); ok {
			return pc.Memory, id, nil
		}
	}
	if firstErr == nil {
		firstErr = ErrNotKubernetes
	}
	return fallback, Identity{}, firstErr
}
