package pipeline

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/cgroupfs"
)

// TestSeedFindsRunningPods: a pod-like cgroup tree with a process in it,
// made before the scan, is found with the process's details.
func TestSeedFindsRunningPods(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating cgroups needs root")
	}
	l, err := cgroupfs.Detect(cgroupfs.ModeAuto)
	if err != nil {
		t.Skip(err)
	}
	root := fmt.Sprintf("/podchron-seed-%d", os.Getpid())
	ctr := root + "/burstable/pod0b6e0b3c-1f2d-4a5b-9c8d-7e6f5a4b3c2d/" + fmt.Sprintf("%064x", 7)
	if err := os.MkdirAll(l.Path(ctr), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		for _, d := range []string{ctr, filepath.Dir(ctr), filepath.Dir(filepath.Dir(ctr)), root} {
			_ = os.Remove(l.Path(d))
		}
	})
	if err := os.WriteFile(filepath.Join(l.Path(ctr), "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Seed(l, []string{root}, time.Now(), "n1")
	if err != nil {
		t.Fatal(err)
	}
	if in[0].Start == nil || in[0].Start.CgroupRoots[0] != root {
		t.Fatalf("first input: %+v", in[0])
	}
	var cgroups, procs int
	id, _ := l.ID(ctr)
	for _, x := range in {
		if x.Cgroup != nil {
			cgroups++
		}
		if x.Proc != nil && int(x.Proc.PID) == cmd.Process.Pid {
			procs++
			if x.Proc.CgroupID != id || x.Proc.Comm != "sleep" || len(x.Proc.Args) != 2 || time.Since(x.Proc.Started) > time.Minute {
				t.Errorf("proc: %+v (cgroup %d)", x.Proc, id)
			}
		}
	}
	if cgroups != 4 || procs != 1 {
		t.Errorf("found %d cgroups (want 4) and %d processes (want 1)", cgroups, procs)
	}
}
