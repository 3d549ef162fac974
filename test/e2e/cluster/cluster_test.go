package cluster

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/test/harness/containerd"
)

// TestClusterUpAndDown starts the cluster, runs a pod through the API
// server, the scheduler and the kubelet, tears everything down and checks
// that the host is as it was.
func TestClusterUpAndDown(t *testing.T) {
	binDir := os.Getenv("PODCHRON_E2E_BIN")
	if binDir == "" {
		t.Skip("PODCHRON_E2E_BIN is not set: `make e2e` builds Kubernetes and runs this test")
	}
	if testing.Short() {
		t.Skip("-short")
	}
	if err := CheckRequirements(binDir); err != nil {
		t.Fatalf("PODCHRON_E2E_BIN is set but the cluster cannot run: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	log := containerd.TestLogger(t, slog.LevelInfo)
	work := t.TempDir()
	snap, err := snapshotHost()
	if err != nil {
		t.Fatal(err)
	}
	var ctrd string // the stack's own containerd (PODCHRON_E2E_STACK=k8s137-containerd2), else Debian's
	if _, err := os.Stat(binDir + "/containerd"); err == nil {
		ctrd = binDir + "/containerd"
	}
	h, err := containerd.New(ctx, containerd.Config{CgroupRoot: "/kubepods", BaseDir: work, Logger: log, Containerd: ctrd})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, Config{BinDir: binDir, WorkDir: work + "/k8s", Runtime: h, Logger: log})
	if err != nil {
		_ = h.Close(ctx)
		t.Fatal(err)
	}
	pod := `apiVersion: v1
kind: Pod
metadata: {name: hello, namespace: default}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: ` + containerd.BusyboxImageName + `
    imagePullPolicy: Never
    command: ["/bin/sh", "-c", "echo hello from the e2e cluster; trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done"]
`
	if out, err := c.KubectlIn(ctx, []byte(pod), "apply", "-f", "-"); err != nil {
		t.Errorf("apply: %v\n%s", err, out)
	} else if out, err := c.Kubectl(ctx, "wait", "--for=condition=Ready", "pod/hello", "--timeout=90s"); err != nil {
		t.Errorf("wait: %v\n%s\nkubelet:\n%s", err, out, c.Logs("kubelet", 4000))
	} else {
		logs, err := c.Kubectl(ctx, "logs", "hello")
		if err != nil || !strings.Contains(string(logs), "hello from the e2e cluster") {
			t.Errorf("kubectl logs: %q, %v", logs, err)
		}
		if out, err := c.Kubectl(ctx, "delete", "pod", "hello", "--wait=true", "--timeout=60s"); err != nil {
			t.Errorf("delete: %v\n%s", err, out)
		}
	}
	if err := c.Close(ctx); err != nil {
		t.Errorf("cluster close: %v", err)
	}
	if err := h.Close(ctx); err != nil {
		t.Errorf("containerd close: %v", err)
	}
	if left := snap.leftovers(); len(left) > 0 {
		t.Errorf("host not restored: %v", left)
	}
	if mps, _ := mountsUnder(work); len(mps) > 0 {
		t.Errorf("mounts left: %v", mps)
	}
	if _, err := os.Stat("/sys/class/net/ptnode0"); err == nil {
		t.Error("node bridge left")
	}
}
