package record

import (
	"encoding/json"
	"time"

	"github.com/podchron/podchron/internal/fact/cri"
)

// legacyTags is the first format version that writes the runtime's
// sandboxes and containers with their JSON tags.
const legacyTags = 3

// decodeRuntime reads a runtime event of a file of the given version.
func decodeRuntime(data []byte, version int) (runtimeEvent, error) {
	if version >= legacyTags {
		var re runtimeEvent
		err := json.Unmarshal(data, &re)
		return re, err
	}
	var l legacyRuntimeEvent
	if err := json.Unmarshal(data, &l); err != nil {
		return runtimeEvent{}, err
	}
	re := runtimeEvent{Event: cri.Event{Type: l.Type, Phase: l.Phase, At: l.At, Observed: l.Observed}, Gap: l.Gap}
	if l.Sandbox != nil {
		re.Sandbox = l.Sandbox.sandbox()
	}
	if l.Container != nil {
		re.Container = l.Container.container()
	}
	return re, nil
}

// The types below are the runtime event as format versions 1 and 2 wrote
// it: the event's own keys were snake_case already, its sandbox's and
// container's were their Go field names. They are that format, frozen:
// fields added to cri.Sandbox or cri.Container since have no key here.

type legacyRuntimeEvent struct {
	Type      cri.EventType    `json:"type"`
	Phase     cri.Phase        `json:"phase,omitempty"`
	At        time.Time        `json:"at"`
	Observed  time.Time        `json:"observed"`
	Sandbox   *legacySandbox   `json:"sandbox,omitempty"`
	Container *legacyContainer `json:"container,omitempty"`
	Gap       *gap             `json:"gap,omitempty"`
}

type legacySandbox struct {
	ID             string            `json:"ID"`
	PodName        string            `json:"PodName"`
	PodNamespace   string            `json:"PodNamespace"`
	PodUID         string            `json:"PodUID"`
	Attempt        uint32            `json:"Attempt"`
	State          cri.SandboxState  `json:"State"`
	CreatedAt      time.Time         `json:"CreatedAt"`
	IP             string            `json:"IP"`
	AdditionalIPs  []string          `json:"AdditionalIPs"`
	NetNSPath      string            `json:"NetNSPath"`
	PID            int               `json:"PID"`
	CgroupsPath    string            `json:"CgroupsPath"`
	RuntimeHandler string            `json:"RuntimeHandler"`
	Labels         map[string]string `json:"Labels"`
	Annotations    map[string]string `json:"Annotations"`
	Detailed       bool              `json:"Detailed"`
}

func (l *legacySandbox) sandbox() *cri.Sandbox {
	return &cri.Sandbox{
		ID: l.ID, PodName: l.PodName, PodNamespace: l.PodNamespace, PodUID: l.PodUID,
		Attempt: l.Attempt, State: l.State, CreatedAt: l.CreatedAt,
		IP: l.IP, AdditionalIPs: l.AdditionalIPs, NetNSPath: l.NetNSPath, PID: l.PID,
		CgroupsPath: l.CgroupsPath, RuntimeHandler: l.RuntimeHandler,
		Labels: l.Labels, Annotations: l.Annotations, Detailed: l.Detailed,
	}
}

type legacyContainer struct {
	ID               string             `json:"ID"`
	SandboxID        string             `json:"SandboxID"`
	Name             string             `json:"Name"`
	Attempt          uint32             `json:"Attempt"`
	PodName          string             `json:"PodName"`
	PodNamespace     string             `json:"PodNamespace"`
	PodUID           string             `json:"PodUID"`
	Image            string             `json:"Image"`
	ImageRef         string             `json:"ImageRef"`
	State            cri.ContainerState `json:"State"`
	CreatedAt        time.Time          `json:"CreatedAt"`
	StartedAt        time.Time          `json:"StartedAt"`
	FinishedAt       time.Time          `json:"FinishedAt"`
	ExitCode         int32              `json:"ExitCode"`
	Reason           string             `json:"Reason"`
	Message          string             `json:"Message"`
	PID              int                `json:"PID"`
	Args             []string           `json:"Args"`
	CgroupsPath      string             `json:"CgroupsPath"`
	LogPath          string             `json:"LogPath"`
	MemoryLimitBytes int64              `json:"MemoryLimitBytes"`
	Labels           map[string]string  `json:"Labels"`
	Annotations      map[string]string  `json:"Annotations"`
	Runtime          struct {
		Name       string `json:"Name"`
		Version    string `json:"Version"`
		APIVersion string `json:"APIVersion"`
	} `json:"Runtime"`
	Detailed bool `json:"Detailed"`
}

func (l *legacyContainer) container() *cri.Container {
	return &cri.Container{
		ID: l.ID, SandboxID: l.SandboxID, Name: l.Name, Attempt: l.Attempt,
		PodName: l.PodName, PodNamespace: l.PodNamespace, PodUID: l.PodUID,
		Image: l.Image, ImageRef: l.ImageRef, State: l.State,
		CreatedAt: l.CreatedAt, StartedAt: l.StartedAt, FinishedAt: l.FinishedAt,
		ExitCode: l.ExitCode, Reason: l.Reason, Message: l.Message, PID: l.PID, Args: l.Args,
		CgroupsPath: l.CgroupsPath, LogPath: l.LogPath, MemoryLimitBytes: l.MemoryLimitBytes,
		Labels: l.Labels, Annotations: l.Annotations,
		Runtime:  cri.RuntimeVersion{Name: l.Runtime.Name, Version: l.Runtime.Version, APIVersion: l.Runtime.APIVersion},
		Detailed: l.Detailed,
	}
}
