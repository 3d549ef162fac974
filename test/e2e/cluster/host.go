package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/cgroupfs"
)

// What a kubelet changes on the host, saved before the cluster starts and
// put back by Close: sysctls it sets, iptables chains it adds, directories it
// creates at fixed paths, and the mounts under its root directory.

// sysctls the kubelet (and the CNI bridge) write.
var hostSysctls = []string{
	"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops", "net/ipv4/ip_forward",
}

// Fixed paths a kubelet creates whatever its flags say.
var hostDirs = []string{
	"/var/log/containers", "/var/log/pods", "/var/lib/kubelet", "/etc/kubernetes",
	"/usr/libexec/kubernetes", "/var/run/kubernetes", "/etc/cni/net.d", "/opt/cni/bin",
}

type hostSnapshot struct {
	sysctls  map[string]string
	iptables map[string][]byte // iptables-save / ip6tables-save output by binary
	absent   []string          // hostDirs that did not exist
}

func sysctlPath(k string) string { return "/proc/sys/" + k }

func snapshotHost() (hostSnapshot, error) {
	s := hostSnapshot{sysctls: map[string]string{}, iptables: map[string][]byte{}}
	for _, k := range hostSysctls {
		b, err := os.ReadFile(sysctlPath(k))
		if err != nil {
			return s, fmt.Errorf("host snapshot: %w", err)
		}
		s.sysctls[k] = strings.TrimSpace(string(b))
	}
	for _, bin := range []string{"iptables-save", "ip6tables-save"} {
		if _, err := exec.LookPath(bin); err != nil {
			continue
		}
		out, err := exec.Command(bin).Output()
		if err != nil {
			return s, fmt.Errorf("host snapshot: %s: %w", bin, err)
		}
		s.iptables[bin] = out
	}
	for _, d := range hostDirs {
		if _, err := os.Lstat(d); errors.Is(err, os.ErrNotExist) {
			s.absent = append(s.absent, d)
		}
	}
	return s, nil
}

// iptablesState is what iptables-save prints that matters: per table, the
// user-defined chains and the rules ("table chain" and "table -A ...").
// Built-in chains with their default policy and no rules are the same as an
// absent table.
func iptablesState(save []byte) (tables map[string]bool, entries map[string]bool) {
	tables, entries = map[string]bool{}, map[string]bool{}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(save))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "*"):
			table = l[1:]
			tables[table] = true
		case strings.HasPrefix(l, ":"):
			f := strings.Fields(l[1:])
			if len(f) > 1 && f[1] == "-" { // user-defined chain
				entries[table+" chain "+f[0]] = true
			} else if len(f) > 1 && f[1] != "ACCEPT" {
				entries[table+" policy "+f[0]+" "+f[1]] = true
			}
		case strings.HasPrefix(l, "-A "):
			entries[table+" "+l] = true
		}
	}
	return tables, entries
}

// restore puts the host back as the snapshot found it and reports what could
// not be restored.
func (s hostSnapshot) restore() error {
	var errs []error
	for k, v := range s.sysctls {
		if err := os.WriteFile(sysctlPath(k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s=%s: %w", k, v, err))
		}
	}
	for bin, saved := range s.iptables {
		if err := restoreIptables(bin, saved); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range s.absent {
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, fmt.Errorf("removing %s: %w", d, err))
		}
	}
	return errors.Join(errs...)
}

// leftovers lists how the host differs from the snapshot.
func (s hostSnapshot) leftovers() []string {
	var left []string
	for k, v := range s.sysctls {
		if b, err := os.ReadFile(sysctlPath(k)); err == nil && strings.TrimSpace(string(b)) != v {
			left = append(left, fmt.Sprintf("sysctl %s is %s, was %s", k, strings.TrimSpace(string(b)), v))
		}
	}
	for bin, saved := range s.iptables {
		out, err := exec.Command(bin).Output()
		if err != nil {
			continue
		}
		_, before := iptablesState(saved)
		_, now := iptablesState(out)
		for c := range now {
			if !before[c] {
				left = append(left, bin+": "+c)
			}
		}
	}
	for _, d := range s.absent {
		if _, err := os.Lstat(d); err == nil {
			left = append(left, "directory "+d)
		}
	}
	sort.Strings(left)
	return left
}

// restoreIptables puts back the saved tables and empties (and, with the
// nf_tables backend, deletes) the tables that did not exist before.
func restoreIptables(saveBin string, saved []byte) error {
	ipt := strings.TrimSuffix(saveBin, "-save")
	out, err := exec.Command(saveBin).Output()
	if err != nil {
		return fmt.Errorf("%s: %w", saveBin, err)
	}
	before, _ := iptablesState(saved)
	now, _ := iptablesState(out)
	var errs []error
	for t := range now {
		if before[t] {
			continue
		}
		for _, op := range []string{"-F", "-X"} {
			if out, err := exec.Command(ipt, "-t", t, op).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s -t %s %s: %w: %s", ipt, t, op, err, out))
			}
		}
		if v, _ := exec.Command(ipt, "-V").Output(); bytes.Contains(v, []byte("nf_tables")) {
			family := "ip"
			if ipt == "ip6tables" {
				family = "ip6"
			}
			_ = exec.Command("nft", "delete", "table", family, t).Run()
		}
	}
	if len(before) > 0 {
		cmd := exec.Command(ipt + "-restore")
		cmd.Stdin = bytes.NewReader(saved)
		if out, err := cmd.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s-restore: %w: %s", ipt, err, out))
		}
	}
	return errors.Join(errs...)
}

// mountsUnder lists the mount points at or below dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("mountinfo: %w", err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 {
			continue
		}
		mp := cgroupfs.UnescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// unmountAll detaches every mount at or below dir (a self bind mount may be
// stacked several times).
func unmountAll(dir string) error {
	for range 16 {
		mps, err := mountsUnder(dir)
		if err != nil {
			return err
		}
		if len(mps) == 0 {
			return nil
		}
		for _, mp := range mps {
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", mp, err)
			}
		}
	}
	return fmt.Errorf("mounts under %s keep coming back", dir)
}

// bridge creates a bridge holding the node's /32 address: the kubelet
// refuses a loopback node IP, and nothing should be reachable from outside.
func addNodeBridge(name, ip string) error {
	for _, args := range [][]string{
		{"link", "add", name, "type", "bridge"},
		{"addr", "add", ip + "/32", "dev", name},
		{"link", "set", name, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

func delBridge(name string) error {
	if _, err := os.Stat("/sys/class/net/" + name); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := exec.Command("ip", "link", "del", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link del %s: %w: %s", name, err, out)
	}
	return nil
}
