package cri

import (
	"encoding/json"
	"maps"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Well-known labels set by the kubelet on sandboxes and containers.
const (
	LabelPodName       = "io.kubernetes.pod.name"
	LabelPodNamespace  = "io.kubernetes.pod.namespace"
	LabelPodUID        = "io.kubernetes.pod.uid"
	LabelContainerName = "io.kubernetes.container.name"
)

// SandboxState is the CRI state of a pod sandbox.
type SandboxState string

// Sandbox states.
const (
	SandboxReady    SandboxState = "ready"
	SandboxNotReady SandboxState = "notready"
)

// ContainerState is the CRI state of a container.
type ContainerState string

// Container states.
const (
	StateCreated ContainerState = "created"
	StateRunning ContainerState = "running"
	StateExited  ContainerState = "exited"
	StateUnknown ContainerState = "unknown"
)

// Well-known container exit reasons reported by containerd and CRI-O.
const (
	ReasonOOMKilled = "OOMKilled"
	ReasonError     = "Error"
	ReasonCompleted = "Completed"
)

// RuntimeVersion is the answer of the CRI Version call.
type RuntimeVersion struct {
	// Name is the runtime name, e.g. "containerd" or "cri-o".
	Name string
	// Version is the runtime's own version, e.g. "1.6.20~ds1".
	Version string
	// APIVersion is the CRI API version the runtime serves, e.g. "v1".
	APIVersion string
}

// Condition is one CRI runtime condition (RuntimeReady, NetworkReady).
type Condition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// RuntimeStatus is the answer of the CRI Status call.
type RuntimeStatus struct {
	Conditions []Condition
}

// Ready reports whether both RuntimeReady and NetworkReady are true.
func (s RuntimeStatus) Ready() bool {
	return s.Condition(runtimeapi.RuntimeReady) && s.Condition(runtimeapi.NetworkReady)
}

// Condition reports the status of the named condition (false when absent).
func (s RuntimeStatus) Condition(typ string) bool {
	for _, c := range s.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return false
}

// Sandbox is podchron's view of a CRI pod sandbox.
type Sandbox struct {
	ID string
	// Pod identity from the sandbox metadata.
	PodName      string
	PodNamespace string
	PodUID       string
	Attempt      uint32
	State        SandboxState
	CreatedAt    time.Time
	// IP is the primary pod IP ("" for host-network pods or stopped sandboxes).
	IP            string
	AdditionalIPs []string
	// NetNSPath is the network namespace path of the sandbox, from the
	// verbose status (runtime spec). Empty for host-network pods and when the
	// runtime does not report it.
	NetNSPath string
	// PID is the sandbox (pause) process ID from the verbose status, 0 if unknown.
	PID int
	// CgroupsPath is the OCI cgroupsPath of the sandbox container (verbose).
	CgroupsPath    string
	RuntimeHandler string
	Labels         map[string]string
	Annotations    map[string]string

	// detailed is set when the fields only available through
	// PodSandboxStatus have been filled in.
	detailed bool
}

// Detailed reports whether the fields from PodSandboxStatus (IP, NetNSPath,
// PID) were filled in; false means only the ListPodSandbox view is known.
func (s Sandbox) Detailed() bool { return s.detailed }

// Container is podchron's view of a CRI container.
type Container struct {
	ID        string
	SandboxID string
	Name      string
	Attempt   uint32
	// Pod identity from the kubelet labels (empty when not run by a kubelet).
	PodName      string
	PodNamespace string
	PodUID       string
	// Image is the image as requested; ImageRef the resolved reference (digest/ID).
	Image      string
	ImageRef   string
	State      ContainerState
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	// Reason is the runtime's exit reason, e.g. OOMKilled, Error, Completed.
	Reason  string
	Message string
	// PID is the container's init process ID from the verbose status (only
	// while running; 0 if unknown).
	PID int
	// Args is the container's configured command line (the OCI spec's
	// process.args from the verbose status: the image's entrypoint and
	// command as the pod spec overrides them); nil if unknown.
	Args []string
	// CgroupsPath is the OCI cgroupsPath from the verbose status, e.g.
	// "/kubepods/burstable/pod<uid>/<id>" (cgroupfs) or
	// "kubepods-burstable-pod<uid>.slice:cri-containerd:<id>" (systemd).
	CgroupsPath      string
	LogPath          string
	MemoryLimitBytes int64
	Labels           map[string]string
	Annotations      map[string]string
	// Runtime is the runtime that reported it (its name and version, from
	// CRI Version when the client connected).
	Runtime RuntimeVersion

	detailed bool
}

// Detailed reports whether the fields from ContainerStatus (start/finish
// times, exit code, reason, PID) were filled in.
func (c Container) Detailed() bool { return c.detailed }

func nsTime(ns int64) time.Time {
	if ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func sandboxStateFrom(s runtimeapi.PodSandboxState) SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return SandboxReady
	}
	return SandboxNotReady
}

func containerStateFrom(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return StateExited
	default:
		return StateUnknown
	}
}

func sandboxFromList(p *runtimeapi.PodSandbox) Sandbox {
	md := p.GetMetadata()
	return Sandbox{
		ID:             p.GetId(),
		PodName:        md.GetName(),
		PodNamespace:   md.GetNamespace(),
		PodUID:         md.GetUid(),
		Attempt:        md.GetAttempt(),
		State:          sandboxStateFrom(p.GetState()),
		CreatedAt:      nsTime(p.GetCreatedAt()),
		RuntimeHandler: p.GetRuntimeHandler(),
		Labels:         maps.Clone(p.GetLabels()),
		Annotations:    maps.Clone(p.GetAnnotations()),
	}
}

func sandboxFromStatus(resp *runtimeapi.PodSandboxStatusResponse) Sandbox {
	st := resp.GetStatus()
	md := st.GetMetadata()
	sb := Sandbox{
		ID:             st.GetId(),
		PodName:        md.GetName(),
		PodNamespace:   md.GetNamespace(),
		PodUID:         md.GetUid(),
		Attempt:        md.GetAttempt(),
		State:          sandboxStateFrom(st.GetState()),
		CreatedAt:      nsTime(st.GetCreatedAt()),
		IP:             st.GetNetwork().GetIp(),
		RuntimeHandler: st.GetRuntimeHandler(),
		Labels:         maps.Clone(st.GetLabels()),
		Annotations:    maps.Clone(st.GetAnnotations()),
		detailed:       true,
	}
	for _, ip := range st.GetNetwork().GetAdditionalIps() {
		sb.AdditionalIPs = append(sb.AdditionalIPs, ip.GetIp())
	}
	if vi, ok := parseVerboseInfo(resp.GetInfo()); ok {
		sb.PID = vi.PID
		sb.CgroupsPath = vi.cgroupsPath()
		if !vi.NetNamespaceClosed {
			sb.NetNSPath = vi.namespacePath("network")
		}
	}
	return sb
}

func containerFromList(c *runtimeapi.Container) Container {
	md := c.GetMetadata()
	ct := Container{
		ID:          c.GetId(),
		SandboxID:   c.GetPodSandboxId(),
		Name:        md.GetName(),
		Attempt:     md.GetAttempt(),
		Image:       c.GetImage().GetImage(),
		ImageRef:    c.GetImageRef(),
		State:       containerStateFrom(c.GetState()),
		CreatedAt:   nsTime(c.GetCreatedAt()),
		Labels:      maps.Clone(c.GetLabels()),
		Annotations: maps.Clone(c.GetAnnotations()),
	}
	ct.fillPodIdentity()
	return ct
}

// containerFromStatus converts a ContainerStatus response. sandboxID is used
// when the runtime's verbose info does not carry it (ContainerStatus itself
// has no sandbox ID).
func containerFromStatus(resp *runtimeapi.ContainerStatusResponse, sandboxID string) Container {
	st := resp.GetStatus()
	md := st.GetMetadata()
	ct := Container{
		ID:               st.GetId(),
		SandboxID:        sandboxID,
		Name:             md.GetName(),
		Attempt:          md.GetAttempt(),
		Image:            st.GetImage().GetImage(),
		ImageRef:         st.GetImageRef(),
		State:            containerStateFrom(st.GetState()),
		CreatedAt:        nsTime(st.GetCreatedAt()),
		StartedAt:        nsTime(st.GetStartedAt()),
		FinishedAt:       nsTime(st.GetFinishedAt()),
		ExitCode:         st.GetExitCode(),
		Reason:           st.GetReason(),
		Message:          st.GetMessage(),
		LogPath:          st.GetLogPath(),
		MemoryLimitBytes: st.GetResources().GetLinux().GetMemoryLimitInBytes(),
		Labels:           maps.Clone(st.GetLabels()),
		Annotations:      maps.Clone(st.GetAnnotations()),
		detailed:         true,
	}
	if vi, ok := parseVerboseInfo(resp.GetInfo()); ok {
		ct.PID = vi.PID
		ct.Args = vi.processArgs()
		ct.CgroupsPath = vi.cgroupsPath()
		if ct.SandboxID == "" {
			ct.SandboxID = vi.SandboxID
		}
	}
	if ct.State != StateRunning {
		// containerd keeps reporting the last PID after exit; it is not a
		// live process of this container any more.
		ct.PID = 0
	}
	ct.fillPodIdentity()
	return ct
}

func (c *Container) fillPodIdentity() {
	c.PodName = c.Labels[LabelPodName]
	c.PodNamespace = c.Labels[LabelPodNamespace]
	c.PodUID = c.Labels[LabelPodUID]
}

// verboseInfo is the subset of the runtime-specific verbose "info" JSON that
// podchron uses. containerd and CRI-O both put a JSON document under the key
// "info" with "pid" and "runtimeSpec" (OCI spec) fields.
type verboseInfo struct {
	PID                int    `json:"pid"`
	SandboxID          string `json:"sandboxID"`
	NetNamespaceClosed bool   `json:"netNamespaceClosed"`
	RuntimeSpec        *struct {
		Process *struct {
			Args []string `json:"args"`
		} `json:"process"`
		Linux *struct {
			CgroupsPath string `json:"cgroupsPath"`
			Namespaces  []struct {
				Type string `json:"type"`
				Path string `json:"path"`
			} `json:"namespaces"`
		} `json:"linux"`
	} `json:"runtimeSpec"`
}

func parseVerboseInfo(info map[string]string) (verboseInfo, bool) {
	var vi verboseInfo
	raw, ok := info["info"]
	if !ok {
		return vi, false
	}
	if err := json.Unmarshal([]byte(raw), &vi); err != nil {
		return vi, false
	}
	return vi, true
}

func (v verboseInfo) processArgs() []string {
	if v.RuntimeSpec == nil || v.RuntimeSpec.Process == nil {
		return nil
	}
	return v.RuntimeSpec.Process.Args
}

func (v verboseInfo) cgroupsPath() string {
	if v.RuntimeSpec == nil || v.RuntimeSpec.Linux == nil {
		return ""
	}
	return v.RuntimeSpec.Linux.CgroupsPath
}

func (v verboseInfo) namespacePath(typ string) string {
	if v.RuntimeSpec == nil || v.RuntimeSpec.Linux == nil {
		return ""
	}
	for _, ns := range v.RuntimeSpec.Linux.Namespaces {
		if ns.Type == typ {
			return ns.Path
		}
	}
	return ""
}
