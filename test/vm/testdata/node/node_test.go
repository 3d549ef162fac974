// Package node runs podchron's self-checking demo (examples/demo) in a qemu
// guest that is a pure cgroup v2 node: cgroup2 alone at /sys/fs/cgroup, a
// real containerd, runc and the CNI plugins, the tracer's probes on the
// guest's kernel. `make test-vm-node` builds the demo and the tracer
// statically and boots the guest (go run ./test/vm -pkg
// ./test/vm/testdata/node ..., see test/vm/README.md).
//
// It lives under testdata/ so `go test ./...` on the host never runs it.
package node

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// The guest paths make test-vm-node puts the binaries at.
var (
	demoBin   = envOr("PODCHRON_VM_DEMO", "/podchron/bin/demo")
	tracerBin = envOr("PODCHRON_VM_TRACER", "/podchron/bin/tracer")
	// cgroupDriver is the demo's -cgroup-driver: "systemd" in a guest
	// whose PID 1 is systemd (make test-vm-node-systemd).
	cgroupDriver = envOr("PODCHRON_VM_CGROUP_DRIVER", "cgroupfs")
)

func inVM(t *testing.T) {
	t.Helper()
	if os.Getenv("PODCHRON_VM") != "1" {
		t.Skip("PODCHRON_VM!=1: this test is meant to run in the podchron VM (make test-vm-node)")
	}
}

// TestPureCgroupV2 checks the guest is the node the demo must prove:
// cgroup2 alone at /sys/fs/cgroup (the kubelet's and runc's test for the
// unified mode), no v1 hierarchy mounted anywhere, the memory controller
// available, and / a mount of its own (runc's pivot_root needs it).
func TestPureCgroupV2(t *testing.T) {
	inVM(t)
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		t.Fatal(err)
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		t.Fatalf("/sys/fs/cgroup has filesystem magic %#x, want cgroup2 (%#x)", st.Type, unix.CGROUP2_SUPER_MAGIC)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	rootIsMount := false
	for _, l := range strings.Split(string(mi), "\n") {
		_, post, ok := strings.Cut(l, " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && fs[0] == "cgroup" {
			t.Errorf("a cgroup v1 hierarchy is mounted: %s", l)
		}
		if f := strings.Fields(l); len(f) > 4 && f[4] == "/" {
			rootIsMount = true
		}
	}
	if !rootIsMount {
		t.Error("/ is not a mount (the initramfs rootfs): runc's pivot_root would fail; run the guest with -switch-root")
	}
	ctrl, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(" "+string(bytes.TrimSpace(ctrl))+" ", " memory ") {
		t.Errorf("the cgroup2 root's controllers %q lack memory", bytes.TrimSpace(ctrl))
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(self)); !strings.HasPrefix(got, "0::/") || strings.Contains(got, "\n") {
		t.Errorf("/proc/self/cgroup is %q, want the one v2 line 0::PATH", got)
	}
}

// TestDemo runs the demo: five pods through the guest's containerd and
// runc, traced by the tracer, every trace checked by the demo itself. On
// this pure v2 node the demo also gives every container
// memory.oom.group=1, as a kubelet does, and holds the OOM pod's trace
// against the kernel's own memory.events: a group kill, scope container.
func TestDemo(t *testing.T) {
	inVM(t)
	for _, b := range []string{demoBin, tracerBin} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("%v (make test-vm-node puts the demo and the tracer there)", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	wants := []string{
		// the demo took the v2 path and checked the kernel's cgroup files
		"demo: pure cgroup v2 host",
		"memory.oom.group=1, ",
		"oom_group_kill 1;",
		"demo: ok    demo/hungry",
		"OOM scope container",
		"demo: all 5 traces are right",
	}
	if cgroupDriver == "systemd" {
		// PID 1 is systemd, which made the pods' slices and the
		// containers' scopes; the demo checked the OOM container's
		// processes are in its scope by the kernel's /proc/PID/cgroup.
		comm, err := os.ReadFile("/proc/1/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "systemd" {
			t.Fatalf("PODCHRON_VM_CGROUP_DRIVER=systemd, yet PID 1 is %q (%v): boot the guest with -systemd", bytes.TrimSpace(comm), err)
		}
		wants = append(wants, "demo: systemd cgroup driver", "-burstable.slice/", "/cri-containerd-", ".scope: memory.oom.group=1")
	}
	cmd := exec.CommandContext(ctx, demoBin, "-tracer", tracerBin, "-cgroup-driver", cgroupDriver)
	cmd.Dir = filepath.Dir(demoBin)
	var out bytes.Buffer
	// The console shows the demo as it runs; the buffer is checked after.
	cmd.Stdout = io.MultiWriter(os.Stdout, &out)
	cmd.Stderr = io.MultiWriter(os.Stderr, &out)
	start := time.Now()
	err := cmd.Run()
	t.Logf("demo ran for %s", time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	// The demo's harness cleaned up: no pod cgroup of its root is left
	// (with systemd: the slice stopped, its pods' slices and scopes gone).
	left, _ := filepath.Glob("/sys/fs/cgroup/podchron-e2e-*")
	sl, _ := filepath.Glob("/sys/fs/cgroup/podchrone2e*.slice")
	if left = append(left, sl...); len(left) > 0 {
		t.Errorf("cgroups left after the demo: %v", left)
	}
	text := out.String()
	for _, want := range wants {
		if !strings.Contains(text, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
}
