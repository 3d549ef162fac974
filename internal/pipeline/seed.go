package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/cgroupfs"
)

// Seed walks the watched cgroup roots and /proc so that pods already running
// when the tracer starts are known: their cgroups (ids and paths) and their
// processes. The inputs start with a Start marker.
func Seed(layout cgroupfs.Layout, roots []string, now time.Time, node string) ([]fact.Input, error) {
	out := []fact.Input{{Time: now, Start: &fact.Start{At: now, NodeName: node, CgroupRoots: roots}}}
	ids := map[uint64]bool{}
	pidsIn := map[int]uint64{} // pid -> cgroup id, from each cgroup's cgroup.procs
	mount := layout.Mount()
	for _, root := range roots {
		dir := layout.Path(root)
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil // vanished while walking, or unreadable: skip
			}
			if !d.IsDir() {
				return nil
			}
			id, err := cgroupfs.DirID(path)
			if err != nil {
				return nil
			}
			rel := "/" + strings.TrimPrefix(strings.TrimPrefix(path, mount), "/")
			ids[id] = true
			// cgroup.procs, not /proc/<pid>/cgroup: inside a cgroup namespace
			// (containerd on pure v2 nodes) the latter is relative to us.
			if b, err := os.ReadFile(filepath.Join(path, "cgroup.procs")); err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil {
						pidsIn[pid] = id
					}
				}
			}
			out = append(out, fact.Input{Time: now, Cgroup: &fact.CgroupSeen{ID: id, Path: rel}})
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("walk %s: %w", dir, err)
		}
	}
	if len(pidsIn) == 0 {
		return out, nil
	}
	pids := make([]int, 0, len(pidsIn))
	for pid := range pidsIn {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	boot := bootTime(now)
	for _, pid := range pids {
		id := pidsIn[pid]
		ps, err := readProc(pid, boot)
		if err != nil {
			continue
		}
		ps.CgroupID = id
		out = append(out, fact.Input{Time: now, Proc: ps})
	}
	return out, nil
}

var clockTicks = 100 // USER_HZ: 100 on every Linux architecture podchron supports

func readProc(pid int, boot time.Time) (*fact.ProcSeen, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	// pid (comm) state ppid ... field 22 starttime
	lp, rp := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if lp < 0 || rp < lp {
		return nil, fmt.Errorf("malformed stat of %d", pid)
	}
	f := strings.Fields(string(stat[rp+2:]))
	if len(f) < 20 {
		return nil, fmt.Errorf("short stat of %d", pid)
	}
	ppid, _ := strconv.Atoi(f[1])
	ticks, _ := strconv.ParseInt(f[19], 10, 64)
	ps := &fact.ProcSeen{PID: uint32(pid), PPID: uint32(ppid), Comm: string(stat[lp+1 : rp]),
		Started: boot.Add(time.Duration(ticks) * time.Second / time.Duration(clockTicks))}
	if cmd, err := readCmdline(pid); err == nil && len(cmd) > 0 {
		ps.Args = strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
	}
	return ps, nil
}

// bootTime is the wall-clock time the system booted.
func bootTime(now time.Time) time.Time {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return time.Time{}
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return time.Time{}
	}
	up, _ := strconv.ParseFloat(f[0], 64)
	return now.Add(-time.Duration(up * float64(time.Second)))
}

// cmdlineMax is how much of a command line the start-up scan reads: what
// the exec probe reads of a live one (ARGS_LEN in bpf/include/events.h).
const cmdlineMax = 256

// readCmdline reads the first cmdlineMax bytes of a process's command line.
func readCmdline(pid int) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, cmdlineMax)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}
