package main

// The OOM pod on a pure cgroup v2 host: what the kernel's own cgroup files
// say, held against the trace. A kubelet on cgroup v2 sets
// memory.oom.group=1 on every container (the harness does the same), so
// the kernel kills every process of the container's cgroup at once: it
// counts one OOM and one group kill, and one oom_kill per victim. The pod's
// cgroup outlives the container's and its memory.events counts its
// descendants' events, so it is read after the container exited.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/podchron/podchron/test/harness/containerd"
)

// cgroupV2Mount is where a pure cgroup v2 host mounts its one hierarchy.
const cgroupV2Mount = "/sys/fs/cgroup"

// checkOOMGroupSet waits until the OOM container's cgroup holds more than
// one process (its shell and the background sleep), and checks that every
// one of them is in that cgroup by a v2 path (/proc/PID/cgroup is the one
// line 0::PATH) and that the cgroup has memory.oom.group 1. It returns the
// cgroup's path (relative to the hierarchy's root).
func checkOOMGroupSet(ctx context.Context, h *containerd.Harness, p *containerd.Pod, id string) (string, error) {
	cg := h.ContainerCgroup(p, id) // <pod cgroup>/<container id>, or the systemd driver's scope
	dir := filepath.Join(cgroupV2Mount, cg)
	var pids []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err == nil {
			pids = strings.Fields(string(b))
			if len(pids) > 1 {
				break
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return "", fmt.Errorf("cgroup v2: want more than one process in %s within 20 s: %w", dir, err)
			}
			return "", fmt.Errorf("cgroup v2: %s: want more than one process within 20 s, have %v", dir, pids)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	group, err := os.ReadFile(filepath.Join(dir, containerd.OOMGroupKey))
	if err != nil {
		return "", fmt.Errorf("cgroup v2: %w", err)
	}
	if g := strings.TrimSpace(string(group)); g != "1" {
		return "", fmt.Errorf("cgroup v2: %s/%s is %s, want 1 (set through CRI's LinuxContainerResources.Unified, as a kubelet does)", dir, containerd.OOMGroupKey, g)
	}
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + pid + "/cgroup")
		if errors.Is(err, os.ErrNotExist) {
			continue // exited meanwhile (the shell's sleep)
		}
		if err != nil {
			return "", fmt.Errorf("cgroup v2: %w", err)
		}
		if got := strings.TrimSpace(string(b)); got != "0::"+cg {
			return "", fmt.Errorf("cgroup v2: /proc/%s/cgroup is %q, want the one v2 line %q", pid, got, "0::"+cg)
		}
	}
	fmt.Fprintf(os.Stderr, "demo: cgroup v2: %s: %s=1, %d processes, each 0::%s\n", dir, containerd.OOMGroupKey, len(pids), cg)
	return cg, nil
}

// checkOOMGroupKilled reads the pod cgroup's memory.events (its container's
// events included) and memory.events.local (its own) after the OOM
// container exited: an OOM, one group kill, at least two kills, all in the
// container (none of the pod's own). It returns memory.events' oom_kill.
//
// What a real kernel counts (6.12, seen in the guest): oom can be more
// than 1 (the limit is hit again while the victims die; no second kill),
// and oom_kill counts the chosen victim twice (killed, then again by the
// group's loop), so it is one more than the processes killed; the
// oom/mark_victim tracepoint fires once per process (the second kill of a
// task already marked is not traced).
func checkOOMGroupKilled(p *containerd.Pod) (int, error) {
	dir := filepath.Join(cgroupV2Mount, p.CgroupParent)
	if localEvents() {
		// memory.events then counts the cgroup's own events only, and the
		// container's cgroup (which had them) is gone.
		fmt.Fprintf(os.Stderr, "demo: cgroup v2: %s is mounted with memory_localevents: the pod's memory.events does not count its container's OOM kills; not checked\n", cgroupV2Mount)
		return 0, nil
	}
	ev, err := readKeyed(filepath.Join(dir, "memory.events"))
	if err != nil {
		return 0, fmt.Errorf("cgroup v2: %w", err)
	}
	local, err := readKeyed(filepath.Join(dir, "memory.events.local"))
	if err != nil {
		return 0, fmt.Errorf("cgroup v2: %w", err)
	}
	fmt.Fprintf(os.Stderr, "demo: cgroup v2: %s/memory.events: oom %d oom_kill %d oom_group_kill %s; memory.events.local: oom %d oom_kill %d\n",
		dir, ev["oom"], ev["oom_kill"], orMissing(ev, "oom_group_kill"), local["oom"], local["oom_kill"])
	var problems []string
	if ev["oom"] < 1 {
		problems = append(problems, fmt.Sprintf("oom %d, want at least 1", ev["oom"]))
	}
	if ev["oom_kill"] < 2 {
		problems = append(problems, fmt.Sprintf("oom_kill %d, want at least 2 (the container's processes, killed as a group)", ev["oom_kill"]))
	}
	// oom_group_kill exists since Linux 5.16.
	if n, ok := ev["oom_group_kill"]; ok && n != 1 {
		problems = append(problems, fmt.Sprintf("oom_group_kill %d, want 1", n))
	}
	if local["oom"] != 0 || local["oom_kill"] != 0 {
		problems = append(problems, fmt.Sprintf("memory.events.local oom %d oom_kill %d, want 0 0 (the limit that ran out is the container's, not the pod's)", local["oom"], local["oom_kill"]))
	}
	if len(problems) > 0 {
		return 0, fmt.Errorf("cgroup v2: %s: %s", dir, strings.Join(problems, "; "))
	}
	return int(ev["oom_kill"]), nil
}

// localEvents reports whether the cgroup2 hierarchy is mounted with
// memory_localevents (memory.events without the descendants' events).
func localEvents() bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(l, " - ")
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if ok && len(pf) > 4 && pf[4] == cgroupV2Mount && len(qf) > 2 && qf[0] == "cgroup2" {
			return slices.Contains(strings.Split(qf[2], ","), "memory_localevents")
		}
	}
	return false
}

// readKeyed reads a cgroup v2 flat-keyed file ("key value" lines).
func readKeyed(path string) (map[string]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, ok := strings.Cut(l, " ")
		if !ok {
			return nil, fmt.Errorf("%s: bad line %q", path, l)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out[k] = n
	}
	return out, nil
}

func orMissing(m map[string]int64, k string) string {
	if n, ok := m[k]; ok {
		return strconv.FormatInt(n, 10)
	}
	return "(not in this kernel)"
}
