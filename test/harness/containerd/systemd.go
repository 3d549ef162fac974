package containerd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Cgroup drivers (Config.CgroupDriver), as the kubelet's --cgroup-driver
// names them.
const (
	// CgroupDriverCgroupfs: pod cgroups are directories the kubelet makes
	// (<root>/<qos>/pod<uid>/<container id>), runc writes the files.
	CgroupDriverCgroupfs = "cgroupfs"
	// CgroupDriverSystemd: pod cgroups are systemd slices and containers
	// systemd scopes (/kubepods.slice/kubepods-<qos>.slice/
	// kubepods-<qos>-pod<uid_>.slice/cri-containerd-<id>.scope), which runc
	// asks systemd for over D-Bus. kubeadm's default since 1.22.
	CgroupDriverSystemd = "systemd"
)

// SystemdRunning reports whether systemd is PID 1 here, by sd_booted(3)'s
// test, the one runc's systemd driver makes too.
func SystemdRunning() bool {
	fi, err := os.Lstat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// criScopePrefix is the prefix containerd's CRI gives a container's scope
// ("<pod slice>:cri-containerd:<id>" becomes cri-containerd-<id>.scope).
const criScopePrefix = "cri-containerd"

// rootSlice checks a systemd driver's cgroup root: one top-level slice,
// "/<stem>.slice", whose stem has no '-' (systemd reads a '-' as a level
// of the slice tree). It returns the stem.
func rootSlice(root string) (string, error) {
	name := strings.TrimPrefix(root, "/")
	stem, ok := strings.CutSuffix(name, ".slice")
	if !ok || stem == "" || strings.ContainsAny(stem, "-/") {
		return "", fmt.Errorf("cgroup root %q: the systemd driver wants a top-level slice /<name>.slice with no '-' in <name> (as /kubepods.slice)", root)
	}
	return stem, nil
}

// systemdPodSlice is the slice unit a kubelet with the systemd driver
// makes for a pod: <stem>[-<qos>]-pod<uid with _ for ->.slice, no QoS
// level for a guaranteed pod (the kubelet's CgroupName.ToSystemd).
func systemdPodSlice(stem, qos, uid string) string {
	pod := "pod" + strings.ReplaceAll(uid, "-", "_") + ".slice"
	if qos == QOSGuaranteed {
		return stem + "-" + pod
	}
	if qos == "" {
		qos = QOSBurstable
	}
	return stem + "-" + qos + "-" + pod
}

// expandSlice is the cgroup path systemd gives a slice unit: each
// '-'-separated prefix is a parent slice ("a-b-c.slice" is
// /a.slice/a-b.slice/a-b-c.slice), as systemd's slice_build_subslice and
// runc's ExpandSlice make it. Written here rather than imported: runc's
// (github.com/opencontainers/cgroups/systemd) would bring its D-Bus client
// into the module for these lines; the guest run (make
// test-vm-node-systemd) holds them to the paths systemd really makes.
func expandSlice(slice string) (string, error) {
	stem, ok := strings.CutSuffix(slice, ".slice")
	if !ok || stem == "" || strings.Contains(slice, "/") || strings.HasPrefix(stem, "-") ||
		strings.HasSuffix(stem, "-") || strings.Contains(stem, "--") {
		return "", fmt.Errorf("%q is not a slice unit name", slice)
	}
	var b strings.Builder
	prefix := ""
	for part := range strings.SplitSeq(stem, "-") {
		prefix += part
		b.WriteString("/" + prefix + ".slice")
		prefix += "-"
	}
	return b.String(), nil
}

// ContainerCgroup is a container's cgroup, relative to the hierarchy's
// root: <pod cgroup>/<id>, or the systemd driver's scope in the pod's
// slice, as containerd's CRI names it.
func (h *Harness) ContainerCgroup(p *Pod, id string) string {
	if h.CgroupDriver != CgroupDriverSystemd {
		return p.CgroupParent + "/" + id
	}
	return p.CgroupParent + "/" + criScopePrefix + "-" + id + ".scope"
}

// stopSlice stops a systemd slice and every unit in it (the pods' slices
// and the containers' scopes, their processes killed), so cleanup finds
// the cgroups gone rather than removing directories under systemd's feet.
// A slice systemd does not know is not an error.
func stopSlice(slice string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", "stop", slice).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl stop %s: %w: %s", slice, err, strings.TrimSpace(string(out)))
	}
	return nil
}
