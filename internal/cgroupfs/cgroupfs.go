// Package cgroupfs knows how this host mounts cgroups: pure v2, hybrid
// (v1 controllers plus v2 at /sys/fs/cgroup/unified) or v1 only. It turns
// cgroup paths into the ids the kernel probes report, and back.
package cgroupfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mode says which cgroup the probes identify a task by.
type Mode int

const (
	// ModeAuto picks V2 when a cgroup2 hierarchy is mounted, else V1Memory.
	ModeAuto Mode = iota
	// ModeV2 uses the default (v2) hierarchy: pure v2 and hybrid hosts.
	ModeV2
	// ModeV1Memory uses the v1 memory controller's hierarchy: v1-only hosts.
	ModeV1Memory
)

func (m Mode) String() string {
	switch m {
	case ModeV2:
		return "v2"
	case ModeV1Memory:
		return "v1-memory"
	default:
		return "auto"
	}
}

// ParseMode parses "auto", "v2" or "v1" / "v1-memory".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "", "auto":
		return ModeAuto, nil
	case "v2":
		return ModeV2, nil
	case "v1", "v1-memory":
		return ModeV1Memory, nil
	}
	return ModeAuto, fmt.Errorf("cgroup mode %q: want auto, v2 or v1", s)
}

// Layout is where this host's cgroup hierarchies are mounted.
type Layout struct {
	// Mode is the resolved mode (never ModeAuto).
	Mode Mode
	// V2Mount is the cgroup2 mount point ("" when none).
	V2Mount string
	// MemoryMount is the v1 memory controller's mount point ("" when none).
	MemoryMount string
	// MemoryHierarchyID is the v1 memory hierarchy's id (/proc/cgroups).
	MemoryHierarchyID int
}

// ErrNoCgroups means no usable cgroup hierarchy was found.
var ErrNoCgroups = errors.New("no usable cgroup hierarchy (neither cgroup2 nor a v1 memory controller is mounted)")

// Detect reads /proc/self/mountinfo and /proc/cgroups.
func Detect(want Mode) (Layout, error) {
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return Layout{}, fmt.Errorf("read mountinfo: %w", err)
	}
	l := parseMountinfo(mi)
	if cg, err := os.ReadFile("/proc/cgroups"); err == nil {
		l.MemoryHierarchyID = memoryHierarchy(cg)
	}
	switch want {
	case ModeV2:
		if l.V2Mount == "" {
			return l, fmt.Errorf("cgroup mode v2 requested: %w", ErrNoCgroups)
		}
		l.Mode = ModeV2
	case ModeV1Memory:
		if l.MemoryMount == "" || l.MemoryHierarchyID <= 0 {
			return l, fmt.Errorf("cgroup mode v1 requested but the memory controller is not mounted: %w", ErrNoCgroups)
		}
		l.Mode = ModeV1Memory
	default:
		switch {
		case l.V2Mount != "":
			l.Mode = ModeV2
		case l.MemoryMount != "" && l.MemoryHierarchyID > 0:
			l.Mode = ModeV1Memory
		default:
			return l, ErrNoCgroups
		}
	}
	return l, nil
}

func parseMountinfo(b []byte) Layout {
	var l Layout
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		// id parent maj:min root mountpoint opts [optional...] - fstype source superopts
		line := sc.Text()
		sep := strings.Index(line, " - ")
		if sep < 0 {
			continue
		}
		pre := strings.Fields(line[:sep])
		post := strings.Fields(line[sep+3:])
		if len(pre) < 5 || len(post) < 1 {
			continue
		}
		mnt := UnescapeMount(pre[4])
		switch post[0] {
		case "cgroup2":
			// Prefer the first (outermost) cgroup2 mount.
			if l.V2Mount == "" {
				l.V2Mount = mnt
			}
		case "cgroup":
			if len(post) >= 3 {
				for _, o := range strings.Split(post[2], ",") {
					if o == "memory" && l.MemoryMount == "" {
						l.MemoryMount = mnt
					}
				}
			}
		}
	}
	return l
}

// UnescapeMount undoes mountinfo's octal escaping (\040 for a space).
func UnescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func memoryHierarchy(b []byte) int {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 4 && f[0] == "memory" && f[3] == "1" {
			id, _ := strconv.Atoi(f[1])
			return id
		}
	}
	return 0
}

// Mount is the mount point of the hierarchy the probes use.
func (l Layout) Mount() string {
	if l.Mode == ModeV1Memory {
		return l.MemoryMount
	}
	return l.V2Mount
}

// HierarchyID is the id the kernel gives that hierarchy (0 for v2).
func (l Layout) HierarchyID() uint32 {
	if l.Mode == ModeV1Memory {
		return uint32(l.MemoryHierarchyID)
	}
	return 0
}

// Path is the filesystem path of a cgroup given relative to the hierarchy
// root ("/kubepods/burstable").
func (l Layout) Path(rel string) string {
	return filepath.Join(l.Mount(), filepath.Clean("/"+rel))
}

// ID returns the id of the cgroup at rel (relative to the hierarchy root):
// the kernfs node id, which is the directory's inode number.
func (l Layout) ID(rel string) (uint64, error) {
	return DirID(l.Path(rel))
}

// DirID returns the cgroup id of a cgroup directory.
func DirID(dir string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return 0, fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return st.Ino, nil
}

// ProcPath returns the cgroup path of a process in the probes' hierarchy,
// from /proc/<pid>/cgroup.
func (l Layout) ProcPath(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", fmt.Errorf("read cgroup of pid %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if l.Mode == ModeV2 && parts[0] == "0" && parts[1] == "" {
			return parts[2], nil
		}
		if l.Mode == ModeV1Memory {
			for _, c := range strings.Split(parts[1], ",") {
				if c == "memory" {
					return parts[2], nil
				}
			}
		}
	}
	return "", fmt.Errorf("pid %d: no %s cgroup line", pid, l.Mode)
}
