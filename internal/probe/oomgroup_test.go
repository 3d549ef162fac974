//go:build linux

package probe

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact/kernel"
)

// TestOOMGroupKill: a container's cgroup as the kubelet makes it on cgroup
// v2 (a memory limit and memory.oom.group=1, below a pod cgroup without a
// limit), with three processes; one allocates past the limit. The kernel
// kills all three in one OOM invocation: oom/mark_victim fires once for each,
// in the context of the task that hit the limit, and every event carries the
// same memory cgroups with the same counts (the container's OOM count rose
// once, before the first victim). These are the facts the model's
// group-kill rule (internal/correlate/oom.go) relies on.
func TestOOMGroupKill(t *testing.T) {
	e := setup(t)
	if e.layout.MemoryMount != "" {
		t.Skipf("the memory controller is on cgroup v1 here (%s; cgroup2 at %q has none): memory.oom.group exists on cgroup v2 only; "+
			"this test runs on pure-v2 hosts and in the guests of make test-vm", e.layout.MemoryMount, e.layout.V2Mount)
	}
	if !hasController(t, filepath.Join(e.layout.V2Mount, "cgroup.controllers"), "memory") {
		t.Skipf("cgroup2 at %s has no memory controller", e.layout.V2Mount)
	}
	writeFile(t, filepath.Join(e.layout.V2Mount, "cgroup.subtree_control"), "+memory")
	writeFile(t, filepath.Join(e.dir(e.root), "cgroup.subtree_control"), "+memory")
	pod := e.dir(e.cgroup(t, "oomgroup-pod"))
	writeFile(t, filepath.Join(pod, "cgroup.subtree_control"), "+memory")
	ctr := filepath.Join(pod, "ctr")
	mkCgroup(t, ctr)
	writeFile(t, filepath.Join(ctr, "memory.max"), strconv.Itoa(64<<20))
	if _, err := os.Stat(filepath.Join(ctr, "memory.swap.max")); err == nil {
		writeFile(t, filepath.Join(ctr, "memory.swap.max"), "0")
	}
	writeFile(t, filepath.Join(ctr, "memory.oom.group"), "1")

	sleepers := []*helper{e.start(t, []string{ctr}, "sleep"), e.start(t, []string{ctr}, "sleep")}
	alloc := e.start(t, []string{ctr}, "alloc", "1024")
	alloc.wait(t)
	for _, h := range sleepers {
		h.wait(t)
	}
	victims := map[uint32]bool{alloc.pid: true, sleepers[0].pid: true, sleepers[1].pid: true}
	var ooms []*kernel.OOMEvent
	for pid := range victims {
		wait(t, e.col, "OOM kill of "+strconv.Itoa(int(pid)), func(ev *kernel.OOMEvent) bool { return ev.VictimTGID == pid })
		exit := wait(t, e.col, "exit", func(ev *kernel.ExitEvent) bool { return ev.TGID == pid })
		if exit.Signal != syscall.SIGKILL {
			t.Errorf("%d: exit signal %v, want SIGKILL", pid, exit.Signal)
		}
	}
	for _, ev := range e.col.all(func(ev kernel.Event) bool {
		o, ok := ev.(*kernel.OOMEvent)
		return ok && victims[o.VictimTGID]
	}) {
		ooms = append(ooms, ev.(*kernel.OOMEvent))
		t.Logf("OOM: %s", kernel.Format(ev))
	}
	if len(ooms) != 3 {
		t.Fatalf("%d mark_victim events for the 3 processes, want one each", len(ooms))
	}
	first := ooms[0]
	checkOOMMemcgs(t, first, []string{ctr, pod}, 0)
	for _, o := range ooms[1:] {
		if o.TGID != first.TGID || o.PID != first.PID {
			t.Errorf("victim %d: the OOM killer ran in task %d/%d, the first victim's in %d/%d: not one invocation",
				o.VictimTGID, o.TGID, o.PID, first.TGID, first.PID)
		}
		if !slices.Equal(o.Memcgs, first.Memcgs) {
			t.Errorf("victim %d: memory cgroups %+v, the first victim's %+v: a count rose between victims of one invocation",
				o.VictimTGID, o.Memcgs, first.Memcgs)
		}
		if d := time.Duration(o.BootNS - first.BootNS); d < 0 || d > time.Second {
			t.Errorf("victim %d: %s after the first (the model takes victims within 1 s)", o.VictimTGID, d)
		}
	}
	ev := memoryEvents(t, filepath.Join(ctr, "memory.events.local"))
	if ev["oom"] != first.Memcgs[0].OOMs {
		// A thread that hit the full limit while the kill was under way
		// counts too, without a victim of its own.
		t.Logf("memory.events.local oom %d, the events carry %d", ev["oom"], first.Memcgs[0].OOMs)
	}
	if g, ok := memoryEvents(t, filepath.Join(ctr, "memory.events"))["oom_group_kill"]; ok && g != 1 {
		t.Errorf("memory.events oom_group_kill %d, want 1", g)
	}
	t.Logf("KERNEL-PATH oom-group-kill=3-victims-one-invocation (memory.events.local %v)", ev)
}

func hasController(t *testing.T, file, name string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return slices.Contains(strings.Fields(string(b)), name)
}

// memoryEvents reads a memory.events file (lines "name count").
func memoryEvents(t *testing.T, file string) map[string]uint64 {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("open %s: %v", file, err)
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if n, err := strconv.ParseUint(v, 10, 64); ok && err == nil {
			out[k] = n
		}
	}
	return out
}
