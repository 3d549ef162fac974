package containerd_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/test/harness/containerd"
)

const helperEnv = "PODCHRON_HARNESS_HELPER"

// TestHelperHarnessOwner is not a test: run as a child process by
// TestCleanupStaleAfterOwnerCrash, it starts a harness with a running pod,
// prints its state and blocks until killed.
func TestHelperHarnessOwner(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process only")
	}
	ctx := context.Background()
	h, err := containerd.New(ctx, containerd.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		os.Exit(1)
	}
	pod, err := h.RunPodSandbox(ctx, containerd.PodSpec{Name: "orphan"})
	if err == nil {
		_, err = h.RunContainer(ctx, pod, containerd.ContainerSpec{Name: "sleeper", Command: []string{"sleep", "1000"}})
	}
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(map[string]string{"runtimeDir": h.RuntimeDir, "bridge": h.BridgeName, "cgroupRoot": h.CgroupRoot,
		"socket": h.Socket, "sandboxID": pod.ID, "shimSocket": shimSocketName(h.Socket, pod.ID)})
	fmt.Printf("READY %s\n", b)
	select {} // until SIGKILL: no cleanup runs
}

// shimSocketName is containerd 1.6's shim socket name (see host.go),
// recomputed independently here; the test checks the shim socket with this
// name existed before cleanup.
func shimSocketName(address, sandboxID string) string {
	d := sha256.Sum256([]byte(address + "/k8s.io/" + sandboxID))
	return hex.EncodeToString(d[:])
}

// TestCleanupStaleAfterOwnerCrash kills a harness owner with SIGKILL (no
// cleanup runs: containerd, shims, containers, mounts, cgroups and the
// bridge stay behind) and checks that CleanupStale restores the host.
func TestCleanupStaleAfterOwnerCrash(t *testing.T) {
	if err := containerd.CheckRequirements(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperHarnessOwner$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var info map[string]string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "ERROR ") {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("helper: %s", line)
		}
		if rest, ok := strings.CutPrefix(line, "READY "); ok {
			if err := json.Unmarshal([]byte(rest), &info); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	if info == nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatal("helper did not become ready")
	}
	// Crash the owner.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	go func() { _, _ = io.Copy(io.Discard, out) }()

	rt, cg, br := info["runtimeDir"], info["cgroupRoot"], info["bridge"]
	if _, err := os.Stat(filepath.Join("/run/containerd/s", info["shimSocket"])); err != nil {
		t.Errorf("shim socket not where expected: %v", err)
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", cg)); err != nil {
		t.Fatalf("expected orphaned cgroup %s: %v", cg, err)
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", br)); err != nil {
		t.Fatalf("expected orphaned bridge %s: %v", br, err)
	}

	n, err := containerd.CleanupStale(containerd.TestLogger(t, slog.LevelInfo))
	if err != nil {
		t.Fatalf("CleanupStale: %v", err)
	}
	if n < 1 {
		t.Fatalf("CleanupStale cleaned %d harnesses", n)
	}
	for _, p := range []string{rt, filepath.Join("/sys/fs/cgroup/memory", cg), filepath.Join("/sys/fs/cgroup/unified", cg),
		filepath.Join("/sys/class/net", br)} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s still exists after CleanupStale", p)
		}
	}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil && strings.Contains(string(b), rt) {
		t.Errorf("mounts under %s remain", rt)
	}
	for _, dir := range []string{"/run/containerd/s", "/var/lib/cni/results"} {
		if ents, err := os.ReadDir(dir); err == nil {
			for _, e := range ents {
				if strings.Contains(e.Name(), info["sandboxID"]) || e.Name() == info["shimSocket"] {
					t.Errorf("%s/%s left behind", dir, e.Name())
				}
			}
		}
	}
	if pids := processesMentioning(info["socket"]); len(pids) > 0 {
		t.Errorf("processes still referencing %s: %v", info["socket"], pids)
	}
}

func processesMentioning(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			out = append(out, e.Name()+":"+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
