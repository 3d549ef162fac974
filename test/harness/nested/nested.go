//go:build linux

// Package nested runs a command the way kind and minikube run a Kubernetes
// node: in its own pid, mount and cgroup namespaces, with every cgroup
// hierarchy mounted afresh inside, so that the node's /proc numbers its
// processes in its pid namespace and its /sys/fs/cgroup (and /proc/<pid>/cgroup)
// start at its cgroup namespace's root. The network namespace is the host's
// (kind gives a node its own; the demo's CNI bridge does not need one).
//
// The node's cgroup root is a test root of the caller's: created here in
// every hierarchy, and removed with what is left in it by Close. Nothing
// outside it is touched. unshare(1) (util-linux) makes the namespaces.
package nested

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/cgroupfs"
	"github.com/podchron/podchron/test/harness/cgtree"
)

// Env is set in the node's processes: its value is the node's cgroup root
// as the host sees it.
const Env = "PODCHRON_NESTED_NODE"

// Inside says whether this process was started by Node.Command.
func Inside() bool { return os.Getenv(Env) != "" }

// Check says what running a nested node needs that this host lacks.
func Check() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (namespaces, mounts, cgroups)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return fmt.Errorf("unshare (util-linux) not found: %w", err)
	}
	// busybox's unshare, say, has no cgroup namespaces: try the real thing.
	if out, err := exec.Command("unshare", append(unshareArgs, "--", "/bin/sh", "-c", "exit 0")...).CombinedOutput(); err != nil {
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return fmt.Errorf("unshare %s cannot make a node's namespaces here (busybox's cannot; util-linux's can): %w: %s",
			strings.Join(unshareArgs, " "), err, first)
	}
	if _, err := os.Stat("/proc/self/ns/cgroup"); err != nil {
		return fmt.Errorf("no cgroup namespaces (Linux 4.6+): %w", err)
	}
	if len(hierarchies()) == 0 {
		return errors.New("no cgroup hierarchy is mounted")
	}
	return nil
}

// unshareArgs make a node's namespaces: with --fork the command is PID 1
// of the new pid namespace, with /proc mounted for it; mounts are private.
// Command makes the cgroup namespace first, on its own (see there).
var (
	pidMountArgs = []string{"--pid", "--mount", "--fork", "--mount-proc", "--propagation", "private"}
	unshareArgs  = append([]string{"--cgroup"}, pidMountArgs...)
)

// Node is a cgroup root prepared to be a node's cgroup namespace root.
type Node struct {
	// Root is the node's cgroup root, relative to each hierarchy's root.
	Root string
	dirs []string // <mount><Root>, one per hierarchy
	// leaves: <cgroup2 mount><Root>/init.scope, where the node's processes
	// live (on cgroup v2 a cgroup with processes cannot delegate
	// controllers to its children: kind's entrypoint and systemd's
	// init.scope do the same).
	leaves []string
}

// Prepare creates root (e.g. "/podchron-node-1234") in every cgroup
// hierarchy. It must not exist yet: it is the caller's own.
func Prepare(root string) (*Node, error) {
	root = filepath.Clean("/" + root)
	if root == "/" {
		return nil, errors.New("nested: the node's cgroup root cannot be the hierarchy's root")
	}
	n := &Node{Root: root}
	for _, h := range hierarchies() {
		d := filepath.Join(h.mountPoint, root)
		if err := os.Mkdir(d, 0o755); err != nil {
			_ = n.Close()
			return nil, fmt.Errorf("nested: create cgroup %s: %w", d, err)
		}
		n.dirs = append(n.dirs, d)
		if h.fstype == "cgroup2" {
			leaf := filepath.Join(d, "init.scope")
			if err := os.Mkdir(leaf, 0o755); err != nil {
				_ = n.Close()
				return nil, fmt.Errorf("nested: create cgroup %s: %w", leaf, err)
			}
			n.leaves = append(n.leaves, leaf)
		}
		if slices.Contains(h.options, "cpuset") {
			// A v1 cpuset cgroup takes no task before it has cpus and mems.
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(h.mountPoint, f))
				if err == nil {
					err = os.WriteFile(filepath.Join(d, f), b, 0o644)
				}
				if err != nil {
					_ = n.Close()
					return nil, fmt.Errorf("nested: %s: %w", f, err)
				}
			}
		}
	}
	return n, nil
}

// Command runs name with args as the node's first process (PID 1 of its
// pid namespace): moved into the node's cgroups, it makes a cgroup
// namespace rooted there, moves on cgroup v2 into init.scope below (the
// cgroup namespace stays), then makes new pid and mount namespaces with
// /proc mounted for the new pid namespace and private mount propagation
// (nothing mounted inside shows outside). unshare's own process stays in
// init.scope too, so the node's root has no process of its own and can
// delegate controllers. The command should call SetUp first.
func (n *Node) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	procs := func(dirs []string) string {
		var out []string
		for _, d := range dirs {
			out = append(out, filepath.Join(d, "cgroup.procs"))
		}
		return strings.Join(out, " ")
	}
	// unshare by its path: busybox's sh runs its own applet for a bare name.
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		unshare = "unshare"
	}
	leafStage := `for f in $PODCHRON_NESTED_LEAVES; do echo $$ > "$f" || exit 97; done
exec "$PODCHRON_UNSHARE" ` + strings.Join(pidMountArgs, " ") + ` -- "$@"`
	script := `for f in $PODCHRON_NESTED_PROCS; do echo $$ > "$f" || exit 97; done
exec "$PODCHRON_UNSHARE" --cgroup -- /bin/sh -c "$PODCHRON_NESTED_STAGE2" sh "$@"`
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, "sh", name}, args...)...)
	cmd.Env = append(os.Environ(), "PODCHRON_NESTED_PROCS="+procs(n.dirs), "PODCHRON_NESTED_LEAVES="+procs(n.leaves),
		"PODCHRON_NESTED_STAGE2="+leafStage, "PODCHRON_UNSHARE="+unshare, Env+"="+n.Root)
	// The node's init gets SIGTERM when ctx ends; when it exits the kernel
	// kills everything else in its pid namespace.
	cmd.Cancel = func() error { return cmd.Process.Signal(unix.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// Close kills whatever is still in the node's cgroups (only there) and
// removes them, deepest first.
func (n *Node) Close() error {
	var errs []error
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := n.pids()
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("nested: processes still in %s: %v", n.Root, pids))
			break
		}
		for _, p := range pids {
			_ = unix.Kill(p, unix.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := cgtree.Remove(n.dirs); err != nil {
		errs = append(errs, fmt.Errorf("nested: %w", err))
	}
	return errors.Join(errs...)
}

func (n *Node) pids() []int { return cgtree.PIDs(n.dirs) }

// SetUp runs first in the node, before it starts any other process: it
// mounts every cgroup hierarchy afresh in place of the host's mounts it
// inherited, so that the node sees its cgroup namespace's view (the root its
// own), as a container runtime mounts cgroupfs in a container with a private
// cgroup namespace; on cgroup v2 the root then delegates its controllers.
func SetUp() error {
	if !Inside() {
		return errors.New("nested: not inside a nested node")
	}
	var cur [2]string
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		cur[0] = string(b)
	}
	for _, h := range hierarchies() {
		data := strings.Join(h.options, ",")
		if h.fstype == "cgroup" && strings.HasPrefix(data, "name=") {
			data = "none," + data
		}
		// The kernel refuses a superblock on a mount point that is already
		// the root of a mount of it: detach the host's (in this private
		// mount namespace only) first.
		if err := unix.Unmount(h.mountPoint, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("nested: unmount the host's %s: %w", h.mountPoint, err)
		}
		if err := unix.Mount("cgroup", h.mountPoint, h.fstype, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, data); err != nil {
			return fmt.Errorf("nested: mount %s (%s) at %s: %w", h.fstype, data, h.mountPoint, err)
		}
	}
	// Every line of /proc/self/cgroup is the namespace's root now (the v2
	// line its init.scope).
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return fmt.Errorf("nested: %w", err)
	}
	cur[1] = string(b)
	for _, l := range strings.Split(strings.TrimSpace(cur[1]), "\n") {
		if !strings.HasSuffix(l, ":/") && !strings.HasPrefix(l, "0::/init.scope") {
			return fmt.Errorf("nested: not at the cgroup namespace's root: %q (before the mounts: %q)", l, cur[0])
		}
	}
	// The root delegates every controller it has, so that pods below it
	// get memory limits. One it cannot delegate is not needed by the
	// node's own tests; they say so when they miss it.
	for _, h := range hierarchies() {
		if h.fstype != "cgroup2" {
			continue
		}
		ctrls, _ := os.ReadFile(filepath.Join(h.mountPoint, "cgroup.controllers"))
		for _, c := range strings.Fields(string(ctrls)) {
			_ = os.WriteFile(filepath.Join(h.mountPoint, "cgroup.subtree_control"), []byte("+"+c), 0o644)
		}
	}
	return nil
}

type hierarchy struct {
	mountPoint string
	fstype     string
	options    []string // superblock options but rw/ro: the controllers of a v1 hierarchy
}

// hierarchies are the cgroup and cgroup2 mounts of this mount namespace
// (each mount point once: the last mount there is the visible one).
func hierarchies() []hierarchy {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []hierarchy
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		pf, qf := strings.Fields(pre), strings.Fields(post)
		if len(pf) < 5 || len(qf) < 3 || (qf[0] != "cgroup" && qf[0] != "cgroup2") {
			continue
		}
		var opts []string
		for _, o := range strings.Split(qf[2], ",") {
			if o != "rw" && o != "ro" {
				opts = append(opts, o)
			}
		}
		h := hierarchy{mountPoint: cgroupfs.UnescapeMount(pf[4]), fstype: qf[0], options: opts}
		if i := slices.IndexFunc(out, func(x hierarchy) bool { return x.mountPoint == h.mountPoint }); i >= 0 {
			out[i] = h
			continue
		}
		out = append(out, h)
	}
	return out
}
