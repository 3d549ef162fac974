package cgroupid

import "strings"

// The Format helpers build the cgroup paths kubelet and the runtimes create,
// for tests and fake runtimes. They do not validate their input: Parse the
// result if validity matters. qos is QoSGuaranteed (or ""), QoSBurstable or
// QoSBestEffort; uid is a pod UID in the form Identity.PodUID uses.

// DefaultCgroupfsRoot and DefaultSystemdRoot are the kubepods roots used when
// a root argument is "".
const (
	DefaultCgroupfsRoot = "/kubepods"
	DefaultSystemdRoot  = "/kubepods.slice"
)

// CgroupfsPodPath returns the cgroupfs-driver pod cgroup
// root[/qos]/pod<uid>; root "" means DefaultCgroupfsRoot.
func CgroupfsPodPath(root, qos, uid string) string {
	var b strings.Builder
	b.Grow(len(root) + len(qos) + len(uid) + 24)
	writeRoot(&b, root, DefaultCgroupfsRoot)
	if qos != "" && qos != QoSGuaranteed {
		b.WriteByte('/')
		b.WriteString(qos)
	}
	b.WriteString("/pod")
	b.WriteString(uid)
	return b.String()
}

// CgroupfsContainerPath returns the cgroupfs-driver container cgroup
// root[/qos]/pod<uid>/<id> (containerd, docker); root "" means
// DefaultCgroupfsRoot.
func CgroupfsContainerPath(root, qos, uid, id string) string {
	return CgroupfsPodPath(root, qos, uid) + "/" + id
}

// SystemdPodPath returns the systemd-driver pod slice below
// DefaultSystemdRoot, e.g.
// /kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_>.slice.
func SystemdPodPath(qos, uid string) string { return SystemdPodPathIn("", qos, uid) }

// SystemdContainerPath returns the systemd-driver container scope below
// DefaultSystemdRoot, e.g. .../kubepods-burstable-pod<uid_>.slice/cri-containerd-<id>.scope.
// runtime selects the scope prefix: RuntimeContainerd → cri-containerd,
// RuntimeCRIO → crio, RuntimeDocker → docker, "" → none (<id>.scope); any
// other value is used verbatim as the prefix.
func SystemdContainerPath(qos, uid, runtime, id string) string {
	return SystemdContainerPathIn("", qos, uid, runtime, id)
}

// SystemdPodPathIn is SystemdPodPath below the kubepods slice root (e.g.
// "/kubelet.slice/kubelet-kubepods.slice"); the slice names are prefixed with
// root's last component without ".slice". root "" means DefaultSystemdRoot.
func SystemdPodPathIn(root, qos, uid string) string {
	var b strings.Builder
	b.Grow(2*len(root) + 2*len(qos) + len(uid) + 48)
	writeRoot(&b, root, DefaultSystemdRoot)
	r := b.String()
	kp := strings.TrimSuffix(r[strings.LastIndexByte(r, '/')+1:], ".slice")
	guaranteed := qos == "" || qos == QoSGuaranteed
	if !guaranteed {
		b.WriteByte('/')
		b.WriteString(kp)
		b.WriteByte('-')
		b.WriteString(qos)
		b.WriteString(".slice")
	}
	b.WriteByte('/')
	b.WriteString(kp)
	if !guaranteed {
		b.WriteByte('-')
		b.WriteString(qos)
	}
	b.WriteString("-pod")
	b.WriteString(strings.ReplaceAll(uid, "-", "_"))
	b.WriteString(".slice")
	return b.String()
}

// SystemdContainerPathIn is SystemdContainerPath below the kubepods slice
// root; see SystemdPodPathIn.
func SystemdContainerPathIn(root, qos, uid, runtime, id string) string {
	return SystemdPodPathIn(root, qos, uid) + "/" + ScopeName(runtime, id)
}

// ScopeName returns the systemd scope name a runtime gives container id, see
// SystemdContainerPath.
func ScopeName(runtime, id string) string {
	switch runtime {
	case "":
		return id + ".scope"
	case RuntimeContainerd:
		return "cri-containerd-" + id + ".scope"
	}
	return runtime + "-" + id + ".scope"
}

func writeRoot(b *strings.Builder, root, def string) {
	if root == "" {
		root = def
	}
	root = strings.TrimRight(root, "/")
	if root != "" && root[0] != '/' {
		b.WriteByte('/')
	}
	b.WriteString(root)
}
