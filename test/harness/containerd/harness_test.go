package containerd_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact/cri"
	"github.com/podchron/podchron/test/harness/containerd"
)

// TestHarnessRestoresHost runs a pod with a container, then closes the
// harness explicitly and checks that nothing is left on the host.
func TestHarnessRestoresHost(t *testing.T) {
	h := containerd.Start(t, containerd.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	pod, err := h.RunPodSandbox(ctx, containerd.PodSpec{Name: "restore", Namespace: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(pod.IP); ip == nil || !h.Subnet.Contains(ip) {
		t.Fatalf("pod IP %q not in harness subnet %s", pod.IP, h.Subnet)
	}
	id, err := h.RunContainer(ctx, pod, containerd.ContainerSpec{Name: "sleeper", Command: []string{"sleep", "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.ExecSync(ctx, id, []string{"sh", "-c", "echo hello; cat /proc/1/cmdline | tr '\\0' ' '"}, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "hello\nsleep 1000") {
		t.Fatalf("exec: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
	if !linkExists(h.BridgeName) {
		t.Fatalf("bridge %s not created by CNI", h.BridgeName)
	}
	rtDir, cgRoot, bridge := h.RuntimeDir, h.CgroupRoot, h.BridgeName

	// Close with a running pod: cleanup must remove it.
	if err := h.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if left := h.Leftovers(); len(left) > 0 {
		t.Fatalf("leftovers: %v", left)
	}
	if _, err := os.Stat(rtDir); !os.IsNotExist(err) {
		t.Errorf("runtime dir %s still exists", rtDir)
	}
	for _, ctrl := range []string{"memory", "pids", "cpu", "unified", "systemd"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", ctrl, cgRoot)); !os.IsNotExist(err) {
			t.Errorf("cgroup %s%s still exists", ctrl, cgRoot)
		}
	}
	if linkExists(bridge) {
		t.Errorf("bridge %s still exists", bridge)
	}
}

// TestExtraFilesInImage builds an image with an extra file and a busybox-less
// image holding only a static binary, and runs both.
func TestExtraFilesInImage(t *testing.T) {
	h := containerd.Start(t, containerd.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	if _, err := h.ImportImage(ctx, containerd.Image{
		Name: "localhost/podchron-e2e/extra:1",
		Files: []containerd.File{
			{Path: "/etc/podchron/hello.txt", Data: []byte("hi from layer\n")},
			{Path: "/usr/local/bin/hello", Data: []byte("#!/bin/sh\necho script-ok\n"), Mode: 0o755},
		},
	}); err != nil {
		t.Fatal(err)
	}
	// A scratch image with only the static busybox binary copied in (stands
	// in for a static Go binary such as podchron itself).
	if _, err := h.ImportImage(ctx, containerd.Image{
		Name:       "localhost/podchron-e2e/scratch:1",
		NoBusybox:  true,
		Entrypoint: []string{"/busybox"},
		Files:      []containerd.File{{Path: "/busybox", HostPath: containerd.BusyboxPath}},
	}); err != nil {
		t.Fatal(err)
	}
	pod, err := h.RunPodSandbox(ctx, containerd.PodSpec{Name: "images"})
	if err != nil {
		t.Fatal(err)
	}
	id1, err := h.RunContainer(ctx, pod, containerd.ContainerSpec{
		Name: "extra", Image: "localhost/podchron-e2e/extra:1",
		Command: []string{"sh", "-c", "cat /etc/podchron/hello.txt; hello"},
	})
	if err != nil {
		t.Fatal(err)
	}
	id2, err := h.RunContainer(ctx, pod, containerd.ContainerSpec{
		Name: "scratch", Image: "localhost/podchron-e2e/scratch:1", Args: []string{"echo", "scratch-ok"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{id1: "hi from layer\nscript-ok\n", id2: "scratch-ok\n"} {
		ct, err := h.WaitExited(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ct.ExitCode != 0 || ct.Reason != cri.ReasonCompleted {
			t.Errorf("%s: exit %d reason %s", ct.Name, ct.ExitCode, ct.Reason)
		}
		out := containerLog(t, ct.LogPath)
		if out != want {
			t.Errorf("%s: output %q, want %q", ct.Name, out, want)
		}
	}
}

// containerLog extracts the message parts of a CRI log file
// ("<time> <stream> <P|F> <msg>").
func containerLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("container log: %v", err)
	}
	var out strings.Builder
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		f := strings.SplitN(l, " ", 4)
		if len(f) == 4 {
			out.WriteString(f[3])
			if f[2] == "F" {
				out.WriteByte('\n')
			}
		}
	}
	return out.String()
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}
