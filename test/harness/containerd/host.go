package containerd

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/cgroupfs"

	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/test/harness/cgtree"
)

const stateFileName = "harness.json"

// hostState is what a harness changed on the host; it is persisted in the
// runtime directory so a later harness can clean up after a crashed one.
type hostState struct {
	OwnerPID      int    `json:"ownerPID"`
	OwnerStart    uint64 `json:"ownerStart"`
	ContainerdPID int    `json:"containerdPID"`
	RuntimeDir    string `json:"runtimeDir"`
	Socket        string `json:"socket"`
	CgroupRoot    string `json:"cgroupRoot"`
	// OwnsCgroupRoot is true when the harness created CgroupRoot (it did
	// not exist before): cleanup then removes the whole root. Otherwise only
	// PodCgroups are touched (e.g. with CgroupRoot "/kubepods" next to a real
	// kubelet).
	OwnsCgroupRoot bool     `json:"ownsCgroupRoot"`
	PodCgroups     []string `json:"podCgroups"`
	// Slice is the root slice of a systemd-driver harness: cleanup stops
	// it (its pods' slices and scopes with it) before removing the cgroups.
	Slice string `json:"slice,omitempty"`
	// SandboxIDs of every sandbox created, for the host files named after
	// them (shim sockets, libcni cache).
	SandboxIDs []string `json:"sandboxIDs"`
	Bridge     string   `json:"bridge"`
	Network    string   `json:"network"`
	Subnet     string   `json:"subnet"`
	// CreatedDirs are well-known host directories that did not exist before
	// the harness started (containerd and libcni create them); cleanup
	// removes them again if they are empty.
	CreatedDirs []string `json:"createdDirs"`
}

// sideEffectDirs are created on the host by containerd (shim sockets) and
// libcni (result cache) regardless of the configured root/state; deepest
// first.
var sideEffectDirs = []string{"/run/containerd/s", "/run/containerd", cniCacheDir, "/var/lib/cni"}

// harnessCreatedDirs returns the sideEffectDirs this harness is
// responsible for: those missing now, plus those a live harness created
// (responsibility is shared, so whichever closes last removes them).
// Live harnesses are read before the directories are checked, so a
// harness closing concurrently cannot make one slip through.
func harnessCreatedDirs() []string {
	inherited := map[string]bool{}
	for _, st := range harnessStates() {
		if st.ownerAlive() {
			for _, d := range st.CreatedDirs {
				inherited[d] = true
			}
		}
	}
	var out []string
	for _, d := range sideEffectDirs {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) || inherited[d] {
			out = append(out, d)
		}
	}
	return out
}

// harnessStates reads the state of every harness runtime dir in
// os.TempDir().
func harnessStates() []hostState {
	matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "ptctrd-*", stateFileName))
	var out []hostState
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		var st hostState
		if err := json.Unmarshal(b, &st); err != nil || st.RuntimeDir != filepath.Dir(m) {
			continue
		}
		out = append(out, st)
	}
	return out
}

func (st hostState) ownerAlive() bool {
	return st.OwnerPID > 0 && st.OwnerStart != 0 && procStartTime(st.OwnerPID) == st.OwnerStart
}

// cniCacheDir is libcni's default cache directory used by containerd.
const cniCacheDir = "/var/lib/cni/results"

// CleanupStale removes what harnesses whose owning process has died left
// behind (runtime dirs named ptctrd-* in os.TempDir()). It returns how many
// were cleaned.
func CleanupStale(log *slog.Logger) (int, error) {
	n := 0
	var errs []error
	for _, st := range harnessStates() {
		if st.ownerAlive() {
			continue
		}
		log.Info("cleaning up stale containerd harness", "runtime_dir", st.RuntimeDir, "owner_pid", st.OwnerPID)
		if err := cleanupHost(st, log); err != nil {
			errs = append(errs, err)
		}
		n++
	}
	return n, errors.Join(errs...)
}

// cleanupHost restores the host from everything described by st. Every
// process it kills was started (directly or via containerd) by the harness
// that wrote st: containerd itself (by PID, checked against its command
// line), its shims (matched by their -address), and the processes left in
// the harness's own cgroup root.
func cleanupHost(st hostState, log *slog.Logger) error {
	var errs []error

	// 1. containerd, if still running (stale case).
	if st.ContainerdPID > 0 && strings.Contains(procCmdline(st.ContainerdPID), filepath.Join(st.RuntimeDir, "config.toml")) {
		log.Warn("killing leftover containerd", "pid", st.ContainerdPID)
		_ = unix.Kill(st.ContainerdPID, unix.SIGKILL)
		waitGone(st.ContainerdPID, 5*time.Second)
	}
	// 2. shims serving this containerd.
	for _, pid := range shimPIDs(st.Socket) {
		log.Warn("killing leftover containerd shim", "pid", pid)
		_ = unix.Kill(pid, unix.SIGKILL)
		waitGone(pid, 5*time.Second)
	}
	// 3. the systemd driver's slice, stopped by systemd (it kills what runs
	// in it); then processes still in the harness's cgroups (container
	// processes).
	if st.Slice != "" && SystemdRunning() {
		if err := stopSlice(st.Slice); err != nil {
			log.Warn("stopping the harness's slice", "err", err)
		}
	}
	trees := st.cgroupTrees()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := cgroupPIDs(trees...)
		if len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("processes still in cgroups %v: %v", trees, pids))
			break
		}
		for _, pid := range pids {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// 4. mounts under the runtime directory (netns, rootfs, shm), deepest first.
	if st.RuntimeDir != "" {
		for range 5 {
			mps := mountsUnder(st.RuntimeDir)
			if len(mps) == 0 {
				break
			}
			for _, mp := range mps {
				if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
					log.Debug("unmount", "path", mp, "err", err)
				}
			}
		}
		if mps := mountsUnder(st.RuntimeDir); len(mps) > 0 {
			errs = append(errs, fmt.Errorf("mounts left under %s: %v", st.RuntimeDir, mps))
		}
	}
	// 5. cgroup directories in every hierarchy.
	for _, tree := range trees {
		if err := removeCgroupTree(tree); err != nil {
			errs = append(errs, err)
		}
	}
	// 6. the CNI bridge.
	if st.Bridge != "" && linkExists(st.Bridge) {
		if out, err := exec.Command("ip", "link", "del", st.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("delete bridge %s: %w: %s", st.Bridge, err, bytes.TrimSpace(out)))
		}
	}
	// 7. files named after our sandboxes outside the runtime dir: libcni
	// result cache entries and shim sockets. Both are removed by containerd
	// itself on an orderly teardown; they remain when a shim was killed.
	for _, f := range st.sandboxFiles() {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove %s: %w", f, err))
		}
	}
	// 8. host directories containerd/libcni created, if empty (rmdir never
	// removes a directory another runtime is using).
	for _, d := range st.CreatedDirs {
		if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTEMPTY) && !errors.Is(err, unix.EEXIST) {
			log.Debug("rmdir", "path", d, "err", err)
		}
	}
	// 9. the runtime directory.
	if st.RuntimeDir != "" && strings.Contains(filepath.Base(st.RuntimeDir), "ptctrd-") {
		if len(mountsUnder(st.RuntimeDir)) == 0 {
			if err := os.RemoveAll(st.RuntimeDir); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", st.RuntimeDir, err))
			}
		}
	}
	return errors.Join(errs...)
}

// leftovers lists what of st is still on the host.
func leftovers(st hostState) []string {
	var left []string
	if st.ContainerdPID > 0 && procAlive(st.ContainerdPID) {
		left = append(left, fmt.Sprintf("containerd pid %d running", st.ContainerdPID))
	}
	if pids := shimPIDs(st.Socket); len(pids) > 0 {
		left = append(left, fmt.Sprintf("shims running: %v", pids))
	}
	trees := st.cgroupTrees()
	if pids := cgroupPIDs(trees...); len(pids) > 0 {
		left = append(left, fmt.Sprintf("processes in %v: %v", trees, pids))
	}
	for _, tree := range trees {
		for _, d := range cgroupDirs(tree) {
			left = append(left, "cgroup dir "+d)
		}
	}
	if st.Bridge != "" && linkExists(st.Bridge) {
		left = append(left, "bridge "+st.Bridge)
	}
	if st.RuntimeDir != "" {
		if mps := mountsUnder(st.RuntimeDir); len(mps) > 0 {
			left = append(left, fmt.Sprintf("mounts %v", mps))
		}
		if _, err := os.Stat(st.RuntimeDir); err == nil {
			left = append(left, "runtime dir "+st.RuntimeDir)
		}
	}
	if files := st.sandboxFiles(); len(files) > 0 {
		left = append(left, fmt.Sprintf("files %v", files))
	}
	return left
}

// sandboxFiles returns the existing host files outside the runtime dir
// that belong to st's sandboxes.
func (st hostState) sandboxFiles() []string {
	var cands []string
	if st.Network != "" {
		ms, _ := filepath.Glob(filepath.Join(cniCacheDir, st.Network+"-*"))
		cands = append(cands, ms...)
	}
	for _, id := range st.SandboxIDs {
		cands = append(cands, filepath.Join(cniCacheDir, "cni-loopback-"+id+"-lo"))
		if st.Socket != "" {
			cands = append(cands, shimSocketPath(st.Socket, "k8s.io", id))
		}
	}
	var out []string
	for _, c := range cands {
		if _, err := os.Lstat(c); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// shimSocketPath is where containerd 1.6's runc v2 shim puts its socket:
// /run/containerd/s/<sha256(<containerd address>/<namespace>/<group id>)>,
// the group being the sandbox for CRI pods.
func shimSocketPath(address, namespace, id string) string {
	d := sha256.Sum256([]byte(filepath.Join(address, namespace, id)))
	return filepath.Join("/run/containerd/s", hex.EncodeToString(d[:]))
}

// cgroupTrees returns the cgroup paths (relative to each hierarchy) that
// belong to the harness.
func (st hostState) cgroupTrees() []string {
	if st.OwnsCgroupRoot && st.CgroupRoot != "" && st.CgroupRoot != "/" {
		return []string{st.CgroupRoot}
	}
	return slices.Clone(st.PodCgroups)
}

// cgroupMounts returns the mount points of all cgroup (v1) and cgroup2
// hierarchies.
func cgroupMounts() []string {
	var out []string
	for _, m := range readMountInfo() {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			out = append(out, m.mountPoint)
		}
	}
	return out
}

// cgroupDirs lists existing <hierarchy><root> directories.
func cgroupDirs(root string) []string {
	if root == "" || root == "/" {
		return nil
	}
	var out []string
	for _, mp := range cgroupMounts() {
		d := filepath.Join(mp, root)
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// cgroupPIDs returns the processes in any cgroup below the roots (all
// hierarchies).
func cgroupPIDs(roots ...string) []int {
	var dirs []string
	for _, r := range roots {
		dirs = append(dirs, cgroupDirs(r)...)
	}
	return cgtree.PIDs(dirs)
}

// removeCgroupTree removes root and everything below it in every hierarchy.
func removeCgroupTree(root string) error {
	return cgtree.Remove(cgroupDirs(root))
}

type mountInfo struct {
	mountPoint string
	fstype     string
}

func readMountInfo() []mountInfo {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	var out []mountInfo
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		pf := strings.Fields(pre)
		qf := strings.Fields(post)
		if len(pf) < 5 || len(qf) < 1 {
			continue
		}
		out = append(out, mountInfo{mountPoint: cgroupfs.UnescapeMount(pf[4]), fstype: qf[0]})
	}
	return out
}

// mountsUnder returns mount points below dir, deepest first.
func mountsUnder(dir string) []string {
	dir = filepath.Clean(dir)
	var out []string
	for _, m := range readMountInfo() {
		if m.mountPoint == dir || strings.HasPrefix(m.mountPoint, dir+"/") {
			out = append(out, m.mountPoint)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func linkExists(name string) bool {
	_, err := os.Stat(filepath.Join("/sys/class/net", name))
	return err == nil
}

// shimPIDs returns the PIDs of containerd shims serving socket.
func shimPIDs(socket string) []int {
	if socket == "" {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		args := strings.Split(procCmdline(pid), "\x00")
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i := 0; i+1 < len(args); i++ {
			if args[i] == "-address" && args[i+1] == socket {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func procCmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return string(b)
}

func procAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// a zombie is as good as gone
	i := bytes.LastIndexByte(b, ')')
	return !(i > 0 && i+2 < len(b) && b[i+2] == 'Z')
}

// procStartTime returns the start time (clock ticks since boot) of pid,
// 0 if it does not exist.
func procStartTime(pid int) uint64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	// fields after ")" start at field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

func waitGone(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for procAlive(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

func checkStaticBusybox(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("static busybox %s: %w", p, err)
	}
	defer func() { _ = f.Close() }()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (install busybox-static)", p)
		}
	}
	return nil
}

// pickSubnet returns a random 10.x.y.0/24 that overlaps no local address or
// route and no other live harness's subnet.
func pickSubnet() (*net.IPNet, error) {
	var used []*net.IPNet
	if ifs, err := net.Interfaces(); err == nil {
		for _, ifc := range ifs {
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
					used = append(used, ipn)
				}
			}
		}
	}
	used = append(used, ipv4Routes()...)
	for _, st := range harnessStates() {
		if _, n, err := net.ParseCIDR(st.Subnet); err == nil {
			used = append(used, n)
		}
	}
	for range 200 {
		cand := &net.IPNet{
			IP:   net.IPv4(10, byte(200+rand.IntN(50)), byte(rand.IntN(256)), 0).To4(),
			Mask: net.CIDRMask(24, 32),
		}
		if !slices.ContainsFunc(used, func(u *net.IPNet) bool { return u.Contains(cand.IP) || cand.Contains(u.IP) }) {
			return cand, nil
		}
	}
	return nil, errors.New("no free 10.x.y.0/24 subnet found")
}

// ipv4Routes returns the non-default IPv4 routes from /proc/net/route.
func ipv4Routes() []*net.IPNet {
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return nil
	}
	var out []*net.IPNet
	for i, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if i == 0 || len(f) < 8 {
			continue
		}
		dst, err1 := strconv.ParseUint(f[1], 16, 32)
		mask, err2 := strconv.ParseUint(f[7], 16, 32)
		if err1 != nil || err2 != nil || mask == 0 {
			continue
		}
		ip := make(net.IP, 4)
		m := make(net.IPMask, 4)
		binary.LittleEndian.PutUint32(ip, uint32(dst))
		binary.LittleEndian.PutUint32(m, uint32(mask))
		out = append(out, &net.IPNet{IP: ip, Mask: m})
	}
	return out
}
