//go:build linux

package probe

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/cgroupfs"
	"github.com/podchron/podchron/internal/fact/kernel"
	"github.com/podchron/podchron/test/harness/nested"
)

// The probe tests TestNestedNode runs again inside a node's namespaces. Each
// holds the events' pids against the pids the test's own process (inside)
// sees, and cgroup paths and levels against its own /sys/fs/cgroup.
var nestedTests = []string{
	"TestNamespacesAreRead",
	"TestCgroupRootIsTheMountsNotThePods",
	"TestEveryProgramLoadsAndAttaches",
	"TestEveryProgramIsCheapToVerify",
	"TestExecForkExit",
	"TestOnlyProcessTreeRootsByDefault",
	"TestExitOfPIDNamespaceInit",
	"TestKilledBySIGKILL",
	"TestSignalFromOutsideTheNode",
	"TestSIGTERMFromKnownSender",
	"TestSIGTERMIgnored",
	"TestOOMKill",
	"TestOOMKillOfABystander",
	"TestOOMGroupKill",
	"TestCgroupMkdirRmdir",
	"TestRootCreatedAfterLoad",
	"TestRuntimeProcessFollowed",
	"TestUnwatchedProcessIsFiltered",
}

// nestedMaySkip may skip for the host's own reasons, inside as outside:
// memory.oom.group exists on cgroup v2 only (a hybrid host's memory
// controller is v1; where it runs, make test-vm's guests, it is the one
// whose victims are not the task the OOM killer runs in), and kernels
// before 5.16 do not report verified instructions (5.10: then
// TestEveryProgramLoadsAndAttaches is what shows the programs load).
var nestedMaySkip = map[string]bool{"TestOOMGroupKill": true, "TestEveryProgramIsCheapToVerify": true}

// TestNestedNode runs the probe tests in a node inside a container, as kind
// and minikube make one: the test binary in new pid, mount and cgroup
// namespaces (test/harness/nested), the cgroup namespace's root a test root
// of its own. There the kernel's pids and cgroup paths are not the node's;
// every test must still pass, none may skip.
func TestNestedNode(t *testing.T) {
	if nested.Inside() {
		t.Skip("this is the nested node itself")
	}
	requireProbes(t)
	if err := nested.Check(); err != nil {
		t.Skipf("a nested node cannot run here: %v", err)
	}
	node, err := nested.Prepare(fmt.Sprintf("/podchron-probe-node-%d", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Close(); err != nil {
			t.Errorf("clean up the node's cgroups: %v", err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := node.Command(ctx, os.Args[0], "-test.run", "^("+strings.Join(nestedTests, "|")+")$", "-test.v", "-test.count=1")
	// The host's side of TestSignalFromOutsideTheNode: a kill from outside
	// the node's pid namespace, on request.
	reqDir := t.TempDir()
	cmd.Env = append(cmd.Env, signalRequestEnv+"="+reqDir)
	hostCtx, stopHost := context.WithCancel(ctx)
	hostDone := make(chan error, 1)
	go func() { hostDone <- killOnRequest(hostCtx, reqDir, node.Root) }()
	out, err := cmd.CombinedOutput()
	stopHost()
	if herr := <-hostDone; herr != nil {
		t.Errorf("the host's kill for TestSignalFromOutsideTheNode: %v", herr)
	}
	t.Logf("inside the nested node:\n%s", out)
	if err != nil {
		t.Fatalf("probe tests inside the nested node: %v", err)
	}
	for _, name := range nestedTests {
		if !strings.Contains(string(out), "--- PASS: "+name+" ") &&
			!(nestedMaySkip[name] && strings.Contains(string(out), "--- SKIP: "+name+" ")) {
			t.Errorf("%s did not pass inside the nested node", name)
		}
	}
}

// The inode of the initial pid namespace (PROC_PID_INIT_INO in
// include/linux/proc_ns.h): fixed by the kernel.
const initPIDNamespace = 0xEFFFFFFC

// mountRoot is mountinfo's root field for the mount at mnt (the last one).
func mountRoot(t *testing.T, mountinfo, mnt string) string {
	t.Helper()
	root := ""
	for _, l := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && cgroupfs.UnescapeMount(f[4]) == mnt {
			root = f[3]
		}
	}
	if root == "" {
		t.Fatalf("%s is not in mountinfo", mnt)
	}
	return root
}

// TestNamespacesAreRead: what the nsinfo program reads is this process's
// namespaces: in the host's, no translation; in a nested node (see
// TestNestedNode), its pid namespace's level and its cgroup root.
func TestNamespacesAreRead(t *testing.T) {
	requireProbes(t)
	layout, err := cgroupfs.Detect(cgroupfs.ModeAuto)
	if err != nil {
		t.Skipf("cgroups: %v", err)
	}
	n, err := ReadNamespaces(layout)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("namespaces: %+v", n)
	var pidns unix.Stat_t
	if err := unix.Stat("/proc/self/ns/pid", &pidns); err != nil {
		t.Fatal(err)
	}
	if (pidns.Ino == initPIDNamespace) != (n.PIDLevel == 0) {
		t.Errorf("pid namespace %d at level %d: the initial namespace is %d, and only it is at level 0", pidns.Ino, n.PIDLevel, uint32(initPIDNamespace))
	}
	// The host's cgroupfs starts at the hierarchy's root; a nested node's
	// at its cgroup namespace's root, which is where its own cgroup is.
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil && !nested.Inside() {
		if mountRoot(t, string(mi), layout.Mount()) == "/" && (n.CgroupRoot != "/" || n.CgroupLevel != 0) {
			t.Errorf("cgroupfs mounted at the hierarchy's root, yet read root %s (level %d)", n.CgroupRoot, n.CgroupLevel)
		}
	}
	if !nested.Inside() {
		return
	}
	root := os.Getenv(nested.Env)
	if n.PIDLevel < 1 || n.CgroupRoot != root || n.CgroupLevel != strings.Count(root, "/") {
		t.Errorf("inside a nested node with cgroup root %s: read pid level %d, cgroup root %s level %d", root, n.PIDLevel, n.CgroupRoot, n.CgroupLevel)
	}
}

func TestNamespacesMapCgroupPaths(t *testing.T) {
	host := Namespaces{CgroupRoot: "/"}
	node := Namespaces{CgroupRoot: "/docker/abc", CgroupLevel: 2}
	for _, c := range []struct {
		ns            Namespaces
		local, kernel string
	}{
		{host, "/kubepods", "/kubepods"},
		{node, "/kubepods", "/docker/abc/kubepods"},
		{node, "/kubepods.slice/kubepods-burstable.slice", "/docker/abc/kubepods.slice/kubepods-burstable.slice"},
		{node, "/", "/docker/abc"},
	} {
		if got := c.ns.KernelPath(c.local); got != c.kernel {
			t.Errorf("%s: KernelPath(%s) = %s, want %s", c.ns.CgroupRoot, c.local, got, c.kernel)
		}
		if got, ok := c.ns.LocalPath(c.kernel); !ok || got != c.local {
			t.Errorf("%s: LocalPath(%s) = %s, %v; want %s", c.ns.CgroupRoot, c.kernel, got, ok, c.local)
		}
	}
	// Outside the node's root, a sibling whose name extends it included.
	for _, p := range []string{"/", "/docker", "/docker/abcd/kubepods", "/kubepods"} {
		if got, ok := node.LocalPath(p); ok {
			t.Errorf("LocalPath(%s) = %s: a cgroup outside the namespace mapped onto it", p, got)
		}
	}
}

// TestCgroupRootIsTheMountsNotThePods: the tracer's pod on a node gets a
// cgroup namespace of its own (containerd does so on cgroup v2) while its
// hostPath /sys/fs/cgroup shows the node's view. Kernel paths must be mapped
// onto that mount, not onto the pod's namespace: here the test moves itself
// into a cgroup of its own and reads its namespaces from a thread in a new
// cgroup namespace rooted there, with the mounts unchanged.
func TestCgroupRootIsTheMountsNotThePods(t *testing.T) {
	requireProbes(t)
	layout, err := cgroupfs.Detect(cgroupfs.ModeAuto)
	if err != nil {
		t.Skipf("cgroups: %v", err)
	}
	if layout.Mode != cgroupfs.ModeV2 {
		t.Skip("needs a cgroup v2 hierarchy to move the test process into a cgroup of its own")
	}
	want, err := ReadNamespaces(layout)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := layout.ProcPath(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	dir := layout.Path(fmt.Sprintf("/podchron-podns-%d", os.Getpid()))
	mkCgroup(t, dir)
	moveSelf := func(to string) error {
		return moveProcess(to, os.Getpid())
	}
	if err := moveSelf(dir); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := moveSelf(layout.Path(orig)); err != nil {
			t.Errorf("move the test back to %s: %v", orig, err)
		}
	})
	type result struct {
		n   Namespaces
		own string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, in its own cgroup namespace, ends
		// with this goroutine.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWCGROUP); err != nil {
			ch <- result{err: fmt.Errorf("unshare the cgroup namespace: %w", err)}
			return
		}
		own, _ := os.ReadFile("/proc/thread-self/cgroup")
		n, err := ReadNamespaces(layout)
		ch <- result{n: n, own: string(own), err: err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.Contains(r.own, "0::/\n") {
		t.Fatalf("the thread's cgroup namespace is not rooted at its cgroup: %q", r.own)
	}
	if r.n.CgroupRoot != want.CgroupRoot || r.n.CgroupLevel != want.CgroupLevel {
		t.Errorf("from a cgroup namespace rooted at %s: cgroup root %s (level %d), want the mount's %s (level %d)",
			dir, r.n.CgroupRoot, r.n.CgroupLevel, want.CgroupRoot, want.CgroupLevel)
	}
}

// signalRequestEnv names the directory where TestSignalFromOutsideTheNode
// (inside a nested node) asks TestNestedNode (on the host) for a kill: a
// file "request" with the target's cgroup as the node sees it; the host
// kills every process there with SIGTERM and writes "done".
const signalRequestEnv = "PODCHRON_NESTED_SIGNAL_DIR"

// killOnRequest is the host's side: it serves one request, or none.
func killOnRequest(ctx context.Context, dir, nodeRoot string) error {
	layout, err := cgroupfs.Detect(cgroupfs.ModeAuto)
	if err != nil {
		return err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		b, err := os.ReadFile(filepath.Join(dir, "request"))
		local := strings.TrimSpace(string(b))
		if err != nil || local == "" {
			continue
		}
		procs, err := os.ReadFile(filepath.Join(layout.Path(nodeRoot+local), "cgroup.procs"))
		if err != nil {
			return fmt.Errorf("the node's cgroup %s: %w", local, err)
		}
		for _, f := range strings.Fields(string(procs)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return fmt.Errorf("cgroup.procs: %w", err)
			}
			if err := unix.Kill(pid, unix.SIGTERM); err != nil {
				return fmt.Errorf("kill %d: %w", pid, err)
			}
		}
		return os.WriteFile(filepath.Join(dir, "done"), []byte(strings.TrimSpace(string(procs))), 0o644)
	}
}

// TestSignalFromOutsideTheNode: a signal from a process outside the node's
// pid namespace (the host's, here TestNestedNode's) has no sender pid in
// the node: the event says pid 0 and sender outside, and the target is
// named by its node pid.
func TestSignalFromOutsideTheNode(t *testing.T) {
	dir := os.Getenv(signalRequestEnv)
	if !nested.Inside() || dir == "" {
		t.Skip("needs a sender outside the node: run inside a nested node by TestNestedNode")
	}
	e := setup(t)
	rel := e.cgroup(t, "outside-kill")
	target := e.start(t, []string{e.dir(rel)}, "handle-term")
	target.waitReady(t)
	// Written aside, then renamed: the host polls for the file and must not
	// read it half written (an empty request named the node's own root).
	if err := os.WriteFile(filepath.Join(dir, "request.tmp"), []byte(rel), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "request.tmp"), filepath.Join(dir, "request")); err != nil {
		t.Fatal(err)
	}
	target.wait(t)
	sig := wait(t, e.col, "SIGTERM from outside", func(ev *kernel.SignalEvent) bool {
		return ev.TargetTGID == target.pid && ev.Signal == syscall.SIGTERM
	})
	if sig.TGID != 0 || sig.PID != 0 || !sig.SenderOutside || sig.SenderWatched || sig.Code != kernel.SIUser {
		t.Errorf("SIGTERM from the host: sender tgid %d pid %d outside %v watched %v code %d; want 0, 0, outside, user",
			sig.TGID, sig.PID, sig.SenderOutside, sig.SenderWatched, sig.Code)
	}
	if sig.TargetCgroupID != cgid(t, e.dir(rel)) {
		t.Errorf("target cgroup %d, want %d", sig.TargetCgroupID, cgid(t, e.dir(rel)))
	}
	// The node's own senders are not outside (TestSIGTERMFromKnownSender
	// checks their pids).
	for _, ev := range e.col.all(func(ev kernel.Event) bool {
		s, ok := ev.(*kernel.SignalEvent)
		return ok && s.TGID != 0 && s.SenderOutside
	}) {
		t.Errorf("a sender with a node pid marked outside: %+v", ev)
	}
}
