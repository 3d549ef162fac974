package containerd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
)

// containerdBinary is the containerd a harness runs: cfg.Containerd, else
// $PODCHRON_CONTAINERD, else ContainerdBinary (Debian's, on PATH).
func (c Config) containerdBinary() string {
	if c.Containerd != "" {
		return c.Containerd
	}
	if b := os.Getenv("PODCHRON_CONTAINERD"); b != "" {
		return b
	}
	return ContainerdBinary
}

// containerdMajor reads the major version from `containerd --version`
// ("containerd containerd.io 1.6.20 ..." or "containerd github.com/containerd/containerd/v2 v2.4.2 ...").
func containerdMajor(version string) (int, error) {
	m := regexp.MustCompile(`\sv?(\d+)\.\d+\.\d+`).FindStringSubmatch(version)
	if m == nil {
		return 0, fmt.Errorf("no version in %q", version)
	}
	return strconv.Atoi(m[1])
}

// containerdConfig is the config.toml for a containerd of the given major
// version: version 2 for containerd 1.x, version 3 for containerd 2.x (CRI
// split into io.containerd.cri.v1.runtime / .images and the gRPC server's
// io.containerd.grpc.v1.cri). Both say the same: private root, state and
// sockets, restricted oom_score_adj, the cgroup driver (runc's SystemdCgroup), overlayfs, the harness's runc
// binary as the runc v2 shim's runtime, the harness's CNI network.
func (h *Harness) containerdConfig(major int) string {
	rt := h.RuntimeDir
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	args := []any{
		q(filepath.Join(rt, "root")), q(filepath.Join(rt, "state")), q(h.Socket), q(h.Socket + ".ttrpc"),
		q(h.cfg.LogLevel), q(filepath.Join(rt, "opt")), q(h.PauseImage), q(h.Runtime.Binary),
		q(filepath.Join(rt, "runc")), q(CNIBinDir), q(filepath.Join(rt, "net.d")),
		h.CgroupDriver == CgroupDriverSystemd,
	}
	if major >= 2 {
		return fmt.Sprintf(configV3, args...)
	}
	return fmt.Sprintf(configV2, args...)
}

const configHead = `root = %[1]s
state = %[2]s
oom_score = 0

[grpc]
  address = %[3]s

[ttrpc]
  address = %[4]s

[debug]
  level = %[5]s
`

const configV2 = `version = 2
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]
` + configHead + `
[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %[6]s
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = %[7]s
    restrict_oom_score_adj = true
    disable_apparmor = true
    netns_mounts_under_state_dir = true
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    disable_hugetlb_controller = true
    tolerate_missing_hugetlb_controller = true
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          BinaryName = %[8]s
          Root = %[9]s
          SystemdCgroup = %[12]t
    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = %[10]s
      conf_dir = %[11]s
      max_conf_num = 1
    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""
`

// configV3: NRI is off (its socket is machine-wide, /var/run/nri/nri.sock,
// and would be shared between harnesses).
const configV3 = `version = 3
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.nri.v1.nri"]
` + configHead + `
[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = %[6]s
  [plugins."io.containerd.grpc.v1.cri"]
    disable_tcp_service = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = %[7]s
    [plugins."io.containerd.cri.v1.images".registry]
      config_path = ""
  [plugins."io.containerd.cri.v1.runtime"]
    restrict_oom_score_adj = true
    disable_apparmor = true
    netns_mounts_under_state_dir = true
    disable_hugetlb_controller = true
    tolerate_missing_hugetlb_controller = true
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = %[8]s
          Root = %[9]s
          SystemdCgroup = %[12]t
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = [%[10]s]
      conf_dir = %[11]s
      max_conf_num = 1
`
