package containerd

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podchron/podchron/internal/correlate/cgroupid"
	criclient "github.com/podchron/podchron/internal/cri"
	"github.com/podchron/podchron/internal/fact/cri"
)

// QoS classes (kubelet cgroupfs layout: guaranteed pods sit directly under
// the root, the others under <root>/<qos>).
const (
	QOSGuaranteed = "guaranteed"
	QOSBurstable  = "burstable"
	QOSBestEffort = "besteffort"
)

// PodSpec describes a pod sandbox the way a kubelet would create it.
type PodSpec struct {
	Name      string // default "pod-<rand>"
	Namespace string // default "default"
	UID       string // default a random UUID
	Attempt   uint32
	Hostname  string // default Name
	// QOS selects the cgroup parent: <CgroupRoot>/<qos>/pod<uid>
	// (guaranteed: <CgroupRoot>/pod<uid>), or with the systemd driver
	// the slice <root>-<qos>-pod<uid_>.slice (guaranteed:
	// <root>-pod<uid_>.slice). Default burstable.
	QOS         string
	Labels      map[string]string
	Annotations map[string]string
	HostNetwork bool
	HostPID     bool
	Privileged  bool // required for privileged containers in the pod
}

// Pod is a running (or stopped) sandbox created by RunPodSandbox.
type Pod struct {
	ID        string
	Name      string
	Namespace string
	UID       string
	// CgroupParent is the pod's CRI cgroup parent, its cgroup's path
	// (Harness.CgroupParent).
	CgroupParent string
	// IP is the pod IP assigned by CNI ("" with HostNetwork).
	IP     string
	Config *runtimeapi.PodSandboxConfig
}

// Mount is a host path mounted into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
	Readonly      bool
	// Bidirectional/HostToContainer propagation (default private).
	Propagation runtimeapi.MountPropagation
}

// ContainerSpec describes a container the way a kubelet would create it.
type ContainerSpec struct {
	Name    string
	Attempt uint32
	Image   string // default the harness busybox image
	Command []string
	Args    []string
	// Env as "KEY=value".
	Env        []string
	WorkingDir string
	// MemoryLimitBytes, CPUQuota/CPUPeriod (µs), CPUShares map to
	// LinuxContainerResources; 0 means unset.
	MemoryLimitBytes int64
	CPUQuota         int64
	CPUPeriod        int64
	CPUShares        int64
	// Unified is LinuxContainerResources.Unified: cgroup v2 files the
	// runtime writes in the container's cgroup. On a pure cgroup v2 host the
	// harness adds memory.oom.group=1, as the kubelet does for every
	// container (unless SingleProcessOOMKill), so an OOM kill is a group
	// kill: every process of the container.
	Unified map[string]string
	// SingleProcessOOMKill is the kubelet's singleProcessOOMKill: no
	// memory.oom.group on cgroup v2 (the kernel kills one process).
	SingleProcessOOMKill bool
	Labels               map[string]string
	Annotations          map[string]string
	Mounts               []Mount
	Privileged           bool
}

// ExecResult is the result of ExecSync.
type ExecResult struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int32
}

// OOMGroupKey is the cgroup v2 file the kubelet sets to 1 for every
// container on a pure cgroup v2 host (kuberuntime, unless
// singleProcessOOMKill).
const OOMGroupKey = "memory.oom.group"

// unified is the Unified map of a container's resources: spec.Unified,
// plus memory.oom.group=1 on a pure cgroup v2 host as the kubelet sets it.
func (h *Harness) unified(spec ContainerSpec) map[string]string {
	out := maps.Clone(spec.Unified)
	if h.PureV2 && !spec.SingleProcessOOMKill {
		if _, set := out[OOMGroupKey]; !set {
			if out == nil {
				out = map[string]string{}
			}
			out[OOMGroupKey] = "1"
		}
	}
	return out
}

// CgroupParent returns the CRI cgroup parent a kubelet would give a pod:
// its cgroup's path, a directory (cgroupfs driver) or the pod's slice
// expanded (systemd: /<root>.slice/<root>-<qos>.slice/<root>-<qos>-pod<uid_>.slice,
// what the kubelet's cgroup manager Name() returns; containerd takes the
// last element as the slice to put the container's scope in).
func (h *Harness) CgroupParent(qos, uid string) string {
	if qos != QOSGuaranteed && qos != QOSBestEffort {
		qos = QOSBurstable // the harness's default, whichever the driver
	}
	switch {
	case h.CgroupDriver == CgroupDriverSystemd:
		return cgroupid.SystemdPodPathIn(h.CgroupRoot, qos, uid)
	case qos == QOSGuaranteed:
		return filepath.Join(h.CgroupRoot, "pod"+uid)
	default:
		return filepath.Join(h.CgroupRoot, qos, "pod"+uid)
	}
}

func (h *Harness) rt() (runtimeapi.RuntimeServiceClient, error) {
	c := h.CRI()
	if c == nil {
		return nil, errors.New("containerd is not running")
	}
	return c.RuntimeService(), nil
}

func (h *Harness) timed(op string, start time.Time) time.Duration {
	d := time.Since(start)
	h.timings.Record(op, d)
	return d
}

// RunPodSandbox creates and starts a pod sandbox (CNI ADD included) and
// returns it with its IP.
func (h *Harness) RunPodSandbox(ctx context.Context, spec PodSpec) (*Pod, error) {
	rt, err := h.rt()
	if err != nil {
		return nil, err
	}
	if spec.Name == "" {
		spec.Name = "pod-" + randHex(3)
	}
	if spec.Namespace == "" {
		spec.Namespace = "default"
	}
	if spec.UID == "" {
		spec.UID = NewUID()
	}
	if spec.Hostname == "" && !spec.HostNetwork {
		spec.Hostname = spec.Name
	}
	parent := h.CgroupParent(spec.QOS, spec.UID)
	labels := map[string]string{
		cri.LabelPodName:      spec.Name,
		cri.LabelPodNamespace: spec.Namespace,
		cri.LabelPodUID:       spec.UID,
	}
	maps.Copy(labels, spec.Labels)
	annotations := map[string]string{
		"kubernetes.io/config.source": "api",
		"kubernetes.io/config.seen":   time.Now().UTC().Format(time.RFC3339Nano),
	}
	maps.Copy(annotations, spec.Annotations)
	nsOpts := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if spec.HostNetwork {
		nsOpts.Network = runtimeapi.NamespaceMode_NODE
	}
	if spec.HostPID {
		nsOpts.Pid = runtimeapi.NamespaceMode_NODE
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: spec.Name, Namespace: spec.Namespace, Uid: spec.UID, Attempt: spec.Attempt,
		},
		Hostname:     spec.Hostname,
		LogDirectory: filepath.Join(h.RuntimeDir, "pods", spec.Namespace+"_"+spec.Name+"_"+spec.UID),
		Labels:       labels,
		Annotations:  annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: parent,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: nsOpts,
				Privileged:       spec.Privileged,
			},
		},
	}

	// Record the pod cgroup before creating it, so cleanup finds it even if
	// we crash right after.
	h.mu.Lock()
	h.hostInfo.PodCgroups = append(h.hostInfo.PodCgroups, parent)
	h.mu.Unlock()
	if err := h.writeState(); err != nil {
		return nil, err
	}

	start := time.Now()
	resp, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		return nil, fmt.Errorf("RunPodSandbox %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	d := h.timed("RunPodSandbox", start)
	h.mu.Lock()
	h.hostInfo.SandboxIDs = append(h.hostInfo.SandboxIDs, resp.GetPodSandboxId())
	h.mu.Unlock()
	if err := h.writeState(); err != nil {
		return nil, err
	}
	pod := &Pod{
		ID: resp.GetPodSandboxId(), Name: spec.Name, Namespace: spec.Namespace, UID: spec.UID,
		CgroupParent: parent, Config: cfg,
	}
	if st, err := h.CRI().SandboxStatus(ctx, pod.ID); err == nil {
		pod.IP = st.IP
	} else {
		return pod, fmt.Errorf("PodSandboxStatus %s: %w", pod.ID, err)
	}
	h.log.Debug("RunPodSandbox", "pod", spec.Namespace+"/"+spec.Name, "sandbox_id", pod.ID, "ip", pod.IP, "took", d)
	return pod, nil
}

// CreateContainer creates a container in pod and returns its ID.
func (h *Harness) CreateContainer(ctx context.Context, pod *Pod, spec ContainerSpec) (string, error) {
	rt, err := h.rt()
	if err != nil {
		return "", err
	}
	if spec.Name == "" {
		return "", errors.New("CreateContainer: empty container name")
	}
	if spec.Image == "" {
		spec.Image = h.BusyboxImage
	}
	labels := map[string]string{
		cri.LabelContainerName: spec.Name,
		cri.LabelPodName:       pod.Name,
		cri.LabelPodNamespace:  pod.Namespace,
		cri.LabelPodUID:        pod.UID,
	}
	maps.Copy(labels, spec.Labels)
	annotations := map[string]string{
		"io.kubernetes.container.restartCount":           strconv.Itoa(int(spec.Attempt)),
		"io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
	}
	maps.Copy(annotations, spec.Annotations)
	var envs []*runtimeapi.KeyValue
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		envs = append(envs, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	var mounts []*runtimeapi.Mount
	for _, m := range spec.Mounts {
		mounts = append(mounts, &runtimeapi.Mount{
			HostPath: m.HostPath, ContainerPath: m.ContainerPath, Readonly: m.Readonly, Propagation: m.Propagation,
		})
	}
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: spec.Name, Attempt: spec.Attempt},
		Image:       &runtimeapi.ImageSpec{Image: spec.Image},
		Command:     spec.Command,
		Args:        spec.Args,
		WorkingDir:  spec.WorkingDir,
		Envs:        envs,
		Mounts:      mounts,
		Labels:      labels,
		Annotations: annotations,
		LogPath:     filepath.Join(spec.Name, strconv.Itoa(int(spec.Attempt))+".log"),
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{
				MemoryLimitInBytes: spec.MemoryLimitBytes,
				CpuQuota:           spec.CPUQuota,
				CpuPeriod:          spec.CPUPeriod,
				CpuShares:          spec.CPUShares,
				Unified:            h.unified(spec),
			},
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				NamespaceOptions: pod.Config.GetLinux().GetSecurityContext().GetNamespaceOptions(),
				Privileged:       spec.Privileged,
			},
		},
	}
	start := time.Now()
	resp, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: pod.ID, Config: cfg, SandboxConfig: pod.Config,
	})
	if err != nil {
		return "", fmt.Errorf("CreateContainer %s in %s/%s: %w", spec.Name, pod.Namespace, pod.Name, err)
	}
	d := h.timed("CreateContainer", start)
	h.log.Debug("CreateContainer", "pod", pod.Namespace+"/"+pod.Name, "container", spec.Name, "container_id", resp.GetContainerId(), "took", d)
	return resp.GetContainerId(), nil
}

// StartContainer starts a created container.
func (h *Harness) StartContainer(ctx context.Context, id string) error {
	rt, err := h.rt()
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("StartContainer %s: %w", id, err)
	}
	h.log.Debug("StartContainer", "container_id", id, "took", h.timed("StartContainer", start))
	return nil
}

// RunContainer is CreateContainer followed by StartContainer.
func (h *Harness) RunContainer(ctx context.Context, pod *Pod, spec ContainerSpec) (string, error) {
	id, err := h.CreateContainer(ctx, pod, spec)
	if err != nil {
		return "", err
	}
	return id, h.StartContainer(ctx, id)
}

// StopContainer stops a container: SIGTERM (or the image's stop signal),
// then SIGKILL after timeout (whole seconds, as in CRI).
func (h *Harness) StopContainer(ctx context.Context, id string, timeout time.Duration) error {
	rt, err := h.rt()
	if err != nil {
		return err
	}
	start := time.Now()
	secs := int64((timeout + time.Second - 1) / time.Second)
	if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: secs}); err != nil {
		return fmt.Errorf("StopContainer %s: %w", id, err)
	}
	h.log.Debug("StopContainer", "container_id", id, "timeout_s", secs, "took", h.timed("StopContainer", start))
	return nil
}

// RemoveContainer removes a container (stopping it first if needed).
func (h *Harness) RemoveContainer(ctx context.Context, id string) error {
	rt, err := h.rt()
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("RemoveContainer %s: %w", id, err)
	}
	h.log.Debug("RemoveContainer", "container_id", id, "took", h.timed("RemoveContainer", start))
	return nil
}

// StopPodSandbox stops all containers of a sandbox and tears down its
// network (CNI DEL).
func (h *Harness) StopPodSandbox(ctx context.Context, id string) error {
	rt, err := h.rt()
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("StopPodSandbox %s: %w", id, err)
	}
	h.log.Debug("StopPodSandbox", "sandbox_id", id, "took", h.timed("StopPodSandbox", start))
	return nil
}

// RemovePodSandbox removes a sandbox and its containers.
func (h *Harness) RemovePodSandbox(ctx context.Context, id string) error {
	rt, err := h.rt()
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("RemovePodSandbox %s: %w", id, err)
	}
	h.log.Debug("RemovePodSandbox", "sandbox_id", id, "took", h.timed("RemovePodSandbox", start))
	return nil
}

// ExecSync runs cmd in a running container and waits for it (at most
// timeout; 0 means no timeout besides ctx).
func (h *Harness) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (ExecResult, error) {
	rt, err := h.rt()
	if err != nil {
		return ExecResult{}, err
	}
	start := time.Now()
	resp, err := rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{
		ContainerId: id, Cmd: cmd, Timeout: int64((timeout + time.Second - 1) / time.Second),
	})
	if err != nil {
		return ExecResult{}, fmt.Errorf("ExecSync %s %q: %w", id, cmd, err)
	}
	h.timed("ExecSync", start)
	return ExecResult{Stdout: resp.GetStdout(), Stderr: resp.GetStderr(), ExitCode: resp.GetExitCode()}, nil
}

// TeardownPod stops and removes the pod's containers, then stops and
// removes the sandbox, as a kubelet does when a pod is deleted.
func (h *Harness) TeardownPod(ctx context.Context, podID string, grace time.Duration) error {
	c := h.CRI()
	if c == nil {
		return errors.New("containerd is not running")
	}
	cts, err := c.ListContainers(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, ct := range cts {
		if ct.SandboxID != podID {
			continue
		}
		if ct.State == cri.StateRunning || ct.State == cri.StateCreated {
			if err := h.StopContainer(ctx, ct.ID, grace); err != nil && !criclient.IsNotFound(err) {
				errs = append(errs, err)
			}
		}
		if err := h.RemoveContainer(ctx, ct.ID); err != nil && !criclient.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := h.StopPodSandbox(ctx, podID); err != nil && !criclient.IsNotFound(err) {
		errs = append(errs, err)
	}
	if err := h.RemovePodSandbox(ctx, podID); err != nil && !criclient.IsNotFound(err) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (h *Harness) removeAllPods(ctx context.Context, c *criclient.Client) error {
	sbs, err := c.ListSandboxes(ctx)
	if err != nil {
		return fmt.Errorf("list sandboxes for cleanup: %w", err)
	}
	var errs []error
	for _, sb := range sbs {
		if err := h.TeardownPod(ctx, sb.ID, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// WaitContainer polls ContainerStatus until cond holds (or ctx is done).
func (h *Harness) WaitContainer(ctx context.Context, id string, cond func(cri.Container) bool) (cri.Container, error) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last cri.Container
	for {
		c := h.CRI()
		if c != nil {
			ct, err := c.ContainerStatus(ctx, id, "")
			if err == nil {
				last = ct
				if cond(ct) {
					return ct, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return last, fmt.Errorf("waiting for container %s (last state %s, reason %q): %w", id, last.State, last.Reason, ctx.Err())
		case <-tick.C:
		}
	}
}

// WaitExited waits until the container has exited.
func (h *Harness) WaitExited(ctx context.Context, id string) (cri.Container, error) {
	return h.WaitContainer(ctx, id, func(c cri.Container) bool { return c.State == cri.StateExited })
}

// NewUID returns a random RFC 4122 version 4 UUID, like a pod UID.
func NewUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
