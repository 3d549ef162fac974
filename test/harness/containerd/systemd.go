package containerd

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/correlate/cgroupid"
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

// checkRootSlice checks a systemd driver's cgroup root: one top-level
// slice, "/<name>.slice", whose name has no '-' (systemd reads a '-' as a
// level of the slice tree, and the pods' slices are named after it).
func checkRootSlice(root string) error {
	stem, ok := strings.CutSuffix(strings.TrimPrefix(root, "/"), ".slice")
	if !ok || stem == "" || strings.ContainsAny(stem, "-/") {
		return fmt.Errorf("cgroup root %q: the systemd driver wants a top-level slice /<name>.slice with no '-' in <name> (as /kubepods.slice)", root)
	}
	return nil
}

// ContainerCgroup is a container's cgroup, relative to the hierarchy's
// root: <pod cgroup>/<id>, or the systemd driver's scope in the pod's
// slice, as containerd's CRI names it.
func (h *Harness) ContainerCgroup(p *Pod, id string) string {
	if h.CgroupDriver != CgroupDriverSystemd {
		return p.CgroupParent + "/" + id
	}
	return p.CgroupParent + "/" + cgroupid.ScopeName(cgroupid.RuntimeContainerd, id)
}

// stopSlice stops a systemd slice and every unit in it (the pods' slices
// and the containers' scopes, their processes killed), so cleanup finds
// the cgroups gone rather than removing directories under systemd's feet.
// Its error (a slice systemd never loaded among them) is for the caller to
// log: cleanup goes on and removes what is left of the cgroups itself.
func stopSlice(slice string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "systemctl", "stop", slice).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl stop %s: %w: %s", slice, err, strings.TrimSpace(string(out)))
	}
	return nil
}
