package cri

import (
	"encoding/json"
	"maps"
	"time"

	crifact "github.com/podchron/podchron/internal/fact/cri"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

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

func nsTime(ns int64) time.Time {
	if ns <= 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func sandboxStateFrom(s runtimeapi.PodSandboxState) crifact.SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return crifact.SandboxReady
	}
	return crifact.SandboxNotReady
}

func containerStateFrom(s runtimeapi.ContainerState) crifact.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return crifact.StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return crifact.StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return crifact.StateExited
	default:
		return crifact.StateUnknown
	}
}

func sandboxFromList(p *runtimeapi.PodSandbox) crifact.Sandbox {
	md := p.GetMetadata()
	return crifact.Sandbox{
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

func sandboxFromStatus(resp *runtimeapi.PodSandboxStatusResponse) crifact.Sandbox {
	st := resp.GetStatus()
	md := st.GetMetadata()
	sb := crifact.Sandbox{
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
		Detailed:       true,
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

func containerFromList(c *runtimeapi.Container) crifact.Container {
	md := c.GetMetadata()
	ct := crifact.Container{
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
	fillPodIdentity(&ct)
	return ct
}

// containerFromStatus converts a ContainerStatus response. sandboxID is used
// when the runtime's verbose info does not carry it (ContainerStatus itself
// has no sandbox ID).
func containerFromStatus(resp *runtimeapi.ContainerStatusResponse, sandboxID string) crifact.Container {
	st := resp.GetStatus()
	md := st.GetMetadata()
	ct := crifact.Container{
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
		Detailed:         true,
	}
	if vi, ok := parseVerboseInfo(resp.GetInfo()); ok {
		ct.PID = vi.PID
		ct.Args = vi.processArgs()
		ct.CgroupsPath = vi.cgroupsPath()
		if ct.SandboxID == "" {
			ct.SandboxID = vi.SandboxID
		}
	}
	if ct.State != crifact.StateRunning {
		// containerd keeps reporting the last PID after exit; it is not a
		// live process of this container any more.
		ct.PID = 0
	}
	fillPodIdentity(&ct)
	return ct
}

func fillPodIdentity(c *crifact.Container) {
	c.PodName = c.Labels[crifact.LabelPodName]
	c.PodNamespace = c.Labels[crifact.LabelPodNamespace]
	c.PodUID = c.Labels[crifact.LabelPodUID]
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
