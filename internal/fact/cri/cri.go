// Package cri holds the facts a container runtime reports over CRI, as Go
// values: sandboxes, containers, the changes between two polls and the
// runtime's outages. It imports nothing heavier than the standard library,
// so the lifecycle model can depend on it; the gRPC client that observes a
// runtime and produces these facts is internal/cri's.
//
// The JSON tags are the form internal/record writes these facts in: a
// field may be renamed, its tag may not (recordings of format 1 and 2,
// written before the tags, are read by internal/record's legacy.go).
package cri

import (
	"fmt"
	"time"
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
	Name string `json:"name"`
	// Version is the runtime's own version, e.g. "1.6.20~ds1".
	Version string `json:"version"`
	// APIVersion is the CRI API version the runtime serves, e.g. "v1".
	APIVersion string `json:"api_version"`
}

// Sandbox is podchron's view of a CRI pod sandbox.
type Sandbox struct {
	ID string `json:"id"`
	// Pod identity from the sandbox metadata.
	PodName      string       `json:"pod_name"`
	PodNamespace string       `json:"pod_namespace"`
	PodUID       string       `json:"pod_uid"`
	Attempt      uint32       `json:"attempt"`
	State        SandboxState `json:"state"`
	CreatedAt    time.Time    `json:"created_at"`
	// IP is the primary pod IP ("" for host-network pods or stopped sandboxes).
	IP            string   `json:"ip"`
	AdditionalIPs []string `json:"additional_ips"`
	// NetNSPath is the network namespace path of the sandbox, from the
	// verbose status (runtime spec). Empty for host-network pods and when the
	// runtime does not report it.
	NetNSPath string `json:"netns_path"`
	// PID is the sandbox (pause) process ID from the verbose status, 0 if unknown.
	PID int `json:"pid"`
	// CgroupsPath is the OCI cgroupsPath of the sandbox container (verbose).
	CgroupsPath    string            `json:"cgroups_path"`
	RuntimeHandler string            `json:"runtime_handler"`
	Labels         map[string]string `json:"labels"`
	Annotations    map[string]string `json:"annotations"`

	// Detailed is set when the fields only available through
	// PodSandboxStatus (IP, NetNSPath, PID) have been filled in; false means
	// only the ListPodSandbox view is known.
	Detailed bool `json:"detailed"`
}

// Container is podchron's view of a CRI container.
type Container struct {
	ID        string `json:"id"`
	SandboxID string `json:"sandbox_id"`
	Name      string `json:"name"`
	Attempt   uint32 `json:"attempt"`
	// Pod identity from the kubelet labels (empty when not run by a kubelet).
	PodName      string `json:"pod_name"`
	PodNamespace string `json:"pod_namespace"`
	PodUID       string `json:"pod_uid"`
	// Image is the image as requested; ImageRef the resolved reference (digest/ID).
	Image      string         `json:"image"`
	ImageRef   string         `json:"image_ref"`
	State      ContainerState `json:"state"`
	CreatedAt  time.Time      `json:"created_at"`
	StartedAt  time.Time      `json:"started_at"`
	FinishedAt time.Time      `json:"finished_at"`
	ExitCode   int32          `json:"exit_code"`
	// Reason is the runtime's exit reason, e.g. OOMKilled, Error, Completed.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// PID is the container's init process ID from the verbose status (only
	// while running; 0 if unknown).
	PID int `json:"pid"`
	// Args is the container's configured command line (the OCI spec's
	// process.args from the verbose status: the image's entrypoint and
	// command as the pod spec overrides them); nil if unknown.
	Args []string `json:"args"`
	// CgroupsPath is the OCI cgroupsPath from the verbose status, e.g.
	// "/kubepods/burstable/pod<uid>/<id>" (cgroupfs) or
	// "kubepods-burstable-pod<uid>.slice:cri-containerd:<id>" (systemd).
	CgroupsPath      string            `json:"cgroups_path"`
	LogPath          string            `json:"log_path"`
	MemoryLimitBytes int64             `json:"memory_limit_bytes"`
	Labels           map[string]string `json:"labels"`
	Annotations      map[string]string `json:"annotations"`
	// Runtime is the runtime that reported it (its name and version, from
	// CRI Version when the client connected).
	Runtime RuntimeVersion `json:"runtime"`

	// Detailed is set when the fields from ContainerStatus (start/finish
	// times, exit code, reason, PID) have been filled in.
	Detailed bool `json:"detailed"`
}

// EventType is the kind of a runtime Event.
type EventType string

// Event types.
const (
	// EventSandboxCreated: a sandbox appeared.
	EventSandboxCreated EventType = "SandboxCreated"
	// EventSandboxStopped: a sandbox went from ready to not ready (StopPodSandbox,
	// or a sandbox first seen already not ready).
	EventSandboxStopped EventType = "SandboxStopped"
	// EventSandboxRemoved: a sandbox disappeared.
	EventSandboxRemoved EventType = "SandboxRemoved"
	// EventContainerCreated: a container appeared.
	EventContainerCreated EventType = "ContainerCreated"
	// EventContainerStarted: a container was seen started (state running, or
	// exited with a start time).
	EventContainerStarted EventType = "ContainerStarted"
	// EventContainerExited: a container was seen exited; Container carries exit
	// code, reason and finish time.
	EventContainerExited EventType = "ContainerExited"
	// EventContainerRemoved: a container disappeared.
	EventContainerRemoved EventType = "ContainerRemoved"
	// EventRuntimeUnavailable: the runtime could not be reached; Gap.Since is set,
	// Gap.Until is zero.
	EventRuntimeUnavailable EventType = "RuntimeUnavailable"
	// EventRuntimeAvailable: the runtime answers again after EventRuntimeUnavailable;
	// Gap is complete. Changes that happened during the gap follow with
	// Phase == PhaseResync.
	EventRuntimeAvailable EventType = "RuntimeAvailable"
)

// Phase tells how a change was observed.
type Phase string

// Phases.
const (
	// PhaseLive: observed between two consecutive successful polls.
	PhaseLive Phase = "live"
	// PhaseInitial: the object already existed at the first successful poll.
	PhaseInitial Phase = "initial"
	// PhaseResync: the change happened while the runtime was unavailable
	// and was observed on the first poll after it came back.
	PhaseResync Phase = "resync"
)

// Gap is a period during which the runtime could not be observed.
type Gap struct {
	// LastSeen is the time of the last successful poll before the gap
	// (zero if the runtime was never reached).
	LastSeen time.Time `json:"last_seen"`
	// Since is the time of the first failed attempt. The runtime went away
	// somewhere in [LastSeen, Since].
	Since time.Time `json:"since"`
	// Until is the time of the first successful poll after the gap (zero
	// while the gap is ongoing).
	Until time.Time `json:"until"`
	// Attempts is the number of failed attempts so far.
	Attempts int `json:"attempts"`
	// Err is the first error seen. An error does not marshal:
	// internal/record writes its text.
	Err error `json:"-"`
}

// Duration is Until-Since (or 0 while ongoing).
func (g Gap) Duration() time.Duration {
	if g.Until.IsZero() {
		return 0
	}
	return g.Until.Sub(g.Since)
}

func (g Gap) String() string {
	if g.Until.IsZero() {
		return fmt.Sprintf("runtime unavailable since %s (last seen %s): %v",
			g.Since.Format(time.RFC3339Nano), fmtTime(g.LastSeen), g.Err)
	}
	return fmt.Sprintf("runtime unavailable from %s to %s (%s, last seen %s): %v",
		g.Since.Format(time.RFC3339Nano), g.Until.Format(time.RFC3339Nano), g.Duration(), fmtTime(g.LastSeen), g.Err)
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format(time.RFC3339Nano)
}

// Event is one observed change of the runtime's state.
type Event struct {
	Type  EventType `json:"type"`
	Phase Phase     `json:"phase,omitempty"`
	// At is when the change happened according to the runtime when known
	// (CreatedAt, StartedAt, FinishedAt), else when it was observed.
	At time.Time `json:"at"`
	// Observed is the time of the snapshot in which the change was seen.
	Observed time.Time `json:"observed"`
	// Sandbox is set for sandbox events and, when known, for container events
	// (the container's sandbox).
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	// Container is set for container events.
	Container *Container `json:"container,omitempty"`
	// Gap is set for EventRuntimeUnavailable and EventRuntimeAvailable.
	Gap *Gap `json:"gap,omitempty"`
}

func (e Event) String() string {
	switch {
	case e.Container != nil:
		c := e.Container
		s := fmt.Sprintf("%s %s/%s %s[%s] state=%s", e.Type, c.PodNamespace, c.PodName, c.Name, shortID(c.ID), c.State)
		if e.Type == EventContainerExited {
			s += fmt.Sprintf(" exit=%d reason=%s", c.ExitCode, c.Reason)
		}
		return s + " phase=" + string(e.Phase)
	case e.Sandbox != nil:
		return fmt.Sprintf("%s %s/%s[%s] state=%s phase=%s", e.Type, e.Sandbox.PodNamespace, e.Sandbox.PodName, shortID(e.Sandbox.ID), e.Sandbox.State, e.Phase)
	case e.Gap != nil:
		return fmt.Sprintf("%s %s", e.Type, e.Gap)
	}
	return string(e.Type)
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
