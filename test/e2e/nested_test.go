package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podchron/podchron/test/harness/nested"
)

// TestMain: inside a nested node (TestClusterNested), the test binary is
// the node's first process and mounts the node's cgroup hierarchies before
// anything else runs.
func TestMain(m *testing.M) {
	if nested.Inside() {
		if err := nested.SetUp(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: nested node:", err)
			os.Exit(97)
		}
	}
	os.Exit(m.Run())
}

// NestedEnv, set to 1, runs TestClusterNested (make e2e-nested).
const NestedEnv = "PODCHRON_E2E_NESTED"

// nestedScenarios are the lifecycle scenarios the nested node runs: a
// start-up with an init container, hooks and probes and a graceful
// delete; SIGTERM ignored and the overrun; an OOM kill; a crash loop's
// back-offs; a kill -9 from a sibling container (its sender's pid, in the
// node's pid namespace); the kubelet's own decisions on a postStart hook's
// failure.
const nestedScenarios = `^TestCluster$/^lifecycle$/^(1-startup-2-graceful-delete|3-sigterm-ignored-overrun|4-oom-kill|5-crashloop-backoff|6b-kill-9-in-pod|35-poststart-hook-fails)$`

// TestClusterNested runs the cluster (etcd, the control plane, the kubelet,
// containerd, the tracer's DaemonSet, Jaeger, the Collector, Prometheus) in
// a node inside a container, as kind and minikube make one: this test
// binary again, as the first process of new pid, mount and cgroup
// namespaces (test/harness/nested), the cgroup namespace's root a test
// cgroup of its own. The tracer's pod (hostPID) sees the node's pids while
// the kernel reports the host's, and the node's cgroup paths start at its
// namespace's root: nestedScenarios must read as they do on a plain node.
func TestClusterNested(t *testing.T) {
	if os.Getenv(NestedEnv) != "1" {
		t.Skipf("%s is not 1: `make e2e-nested` runs the nested node", NestedEnv)
	}
	if nested.Inside() {
		t.Skip("inside the nested node: TestCluster runs here")
	}
	if err := nested.Check(); err != nil {
		t.Fatalf("a nested node was asked for (%s=1) and cannot run here: %v", NestedEnv, err)
	}
	// The node's TMPDIR is its own: the harnesses inside never take the
	// outside's state for a stale one's.
	tmp, err := os.MkdirTemp("", "ptnode-")
	if err != nil {
		t.Fatal(err)
	}
	node, err := nested.Prepare("/" + filepath.Base(tmp))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := node.Close(); err != nil {
			t.Errorf("the nested node's cleanup: %v", err)
		}
		if !t.Failed() {
			_ = os.RemoveAll(tmp)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	cmd := node.Command(ctx, os.Args[0], "-test.run", nestedScenarios, "-test.v", "-test.count=1", "-test.timeout=24m",
		"-test.parallel=8")
	cmd.Env = append(cmd.Env, "TMPDIR="+tmp)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	t.Logf("nested node: cgroup root %s, TMPDIR %s, scenarios %s", node.Root, tmp, nestedScenarios)
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("the cluster in the nested node failed after %s: %v (its work directories: %s)", time.Since(t0).Round(time.Second), err, tmp)
	}
	t.Logf("the cluster in the nested node passed %s in %s", nestedScenarios, time.Since(t0).Round(time.Second))
}
