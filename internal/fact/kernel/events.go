// Package kernel holds the facts the kernel reports, as Go values: the
// event types, their text and JSON forms. It imports nothing heavier than
// the standard library, so the lifecycle model can depend on it; decoding
// the eBPF programs' ring-buffer records into these values is
// internal/probe/event's, loading the programs internal/probe's (Linux).
// The numeric values are the C enums' of bpf/include/events.h;
// internal/probe/event's tests check them against the generated bindings.
package kernel

import (
	"fmt"
	"strings"
	"syscall"
	"time"
)

// EventType mirrors enum event_type in bpf/include/events.h.
type EventType uint32

// The values are the C enum's (checked against bpf2go's bindings by
// internal/probe/event's tests).
const (
	EventExec           = EventType(1)
	EventFork           = EventType(2)
	EventExit           = EventType(3)
	EventSignalGenerate = EventType(4)
	EventSignalDeliver  = EventType(5)
	EventOOMKill        = EventType(6)
	EventCgroupMkdir    = EventType(7)
	EventCgroupRmdir    = EventType(8)
	eventTypeMax        = EventType(9)
)

var eventTypeNames = [...]string{
	EventExec:           "exec",
	EventFork:           "fork",
	EventExit:           "exit",
	EventSignalGenerate: "signal",
	EventSignalDeliver:  "signal_deliver",
	EventOOMKill:        "oom_kill",
	EventCgroupMkdir:    "cgroup_mkdir",
	EventCgroupRmdir:    "cgroup_rmdir",
}

func (t EventType) String() string {
	if t > 0 && t < eventTypeMax {
		return eventTypeNames[t]
	}
	return fmt.Sprintf("event(%d)", uint32(t))
}

// EventTypes lists every event type, in order.
func EventTypes() []EventType {
	ts := make([]EventType, 0, eventTypeMax-1)
	for t := EventExec; t < eventTypeMax; t++ {
		ts = append(ts, t)
	}
	return ts
}

// Origin says why the in-kernel filter let an event through.
type Origin uint32

// Origins, bits of the C enum event_origin.
const (
	OriginWatched = Origin(1) // task in a watched cgroup subtree
	OriginRuntime = Origin(2) // container runtime process
	OriginCNI     = Origin(4) // CNI plugin run
	OriginTarget  = Origin(8) // the signal's target or the OOM victim is watched
)

func (o Origin) String() string {
	var parts []string
	for _, f := range []struct {
		bit  Origin
		name string
	}{{OriginWatched, "watched"}, {OriginRuntime, "runtime"}, {OriginCNI, "cni"}, {OriginTarget, "target"}} {
		if o&f.bit != 0 {
			parts = append(parts, f.name)
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, "|")
}

// Header is common to every event. For signals it describes the sender, for
// OOM kills the task in whose context the OOM killer ran.
type Header struct {
	Type     EventType `json:"type"`
	Origin   Origin    `json:"origin"`
	Time     time.Time `json:"time"`
	BootNS   uint64    `json:"boot_ns"` // CLOCK_BOOTTIME, as the kernel stamped it
	CgroupID uint64    `json:"cgroup_id"`
	TGID     uint32    `json:"tgid"`
	PID      uint32    `json:"pid"`
	PPID     uint32    `json:"ppid"`
	Comm     string    `json:"comm"`
}

// Event is one decoded kernel event.
type Event interface {
	Hdr() *Header
}

// Hdr returns the event's header.
func (h *Header) Hdr() *Header { return h }

// ExecEvent is a successful execve.
type ExecEvent struct {
	Header
	Filename      string   `json:"filename"`
	Args          []string `json:"args"`
	ArgsTruncated bool     `json:"args_truncated,omitempty"`
	CNI           *CNIRun  `json:"cni,omitempty"`
}

// CNIRun is set on an exec of a CNI plugin (CNI_COMMAND in its environment).
type CNIRun struct {
	Command     string `json:"command"` // ADD, DEL, CHECK, VERSION, GC, STATUS
	ContainerID string `json:"container_id,omitempty"`
	IfName      string `json:"ifname,omitempty"`
	NetNS       string `json:"netns,omitempty"`
	Args        string `json:"args,omitempty"` // raw CNI_ARGS
	// From CNI_ARGS, when the runtime passed them (kubelet/CRI do).
	PodNamespace     string `json:"pod_namespace,omitempty"`
	PodName          string `json:"pod_name,omitempty"`
	PodUID           string `json:"pod_uid,omitempty"`
	InfraContainerID string `json:"infra_container_id,omitempty"`
}

// ForkEvent is a new process (not a new thread); the header is the parent.
type ForkEvent struct {
	Header
	ChildTGID uint32 `json:"child_tgid"`
	ChildPID  uint32 `json:"child_pid"`
}

// ExitEvent is a process's end: its last thread exited.
type ExitEvent struct {
	Header
	// ExitCode is the status passed to exit(2); meaningful when Signal is 0.
	ExitCode int `json:"exit_code"`
	// Signal is the signal that killed the process, 0 for a normal exit.
	Signal     syscall.Signal `json:"signal,omitempty"`
	CoreDumped bool           `json:"core_dumped,omitempty"`
	RawStatus  uint32         `json:"raw_status"`
	Start      time.Time      `json:"start"`
	// NSInit: the process was PID 1 of its pid namespace (a container's
	// init, unless the pod shares one namespace).
	NSInit bool `json:"ns_init,omitempty"`
}

// SignalResult mirrors the kernel's TRACE_SIGNAL_* results.
type SignalResult int32

// Signal results.
const (
	SignalDelivered      SignalResult = 0
	SignalIgnored        SignalResult = 1
	SignalAlreadyPending SignalResult = 2
	SignalOverflowFail   SignalResult = 3
	SignalLoseInfo       SignalResult = 4
)

func (r SignalResult) String() string {
	switch r {
	case SignalDelivered:
		return "delivered"
	case SignalIgnored:
		return "ignored"
	case SignalAlreadyPending:
		return "already_pending"
	case SignalOverflowFail:
		return "overflow_fail"
	case SignalLoseInfo:
		return "lose_info"
	}
	return fmt.Sprintf("result(%d)", int32(r))
}

// Disposition is what a task does with a signal.
type Disposition uint32

// Dispositions, as the C enum signal_disposition.
const (
	DispositionDefault = Disposition(0)
	DispositionIgnored = Disposition(1)
	DispositionHandler = Disposition(2)
)

func (d Disposition) String() string {
	switch d {
	case DispositionDefault:
		return "default"
	case DispositionIgnored:
		return "ignored"
	case DispositionHandler:
		return "handler"
	}
	return fmt.Sprintf("disposition(%d)", uint32(d))
}

// si_code values that tell who sent a signal.
const (
	SIUser   int32 = 0    // kill(2)
	SIKernel int32 = 0x80 // the kernel (OOM killer, fatal faults, ...)
	SIQueue  int32 = -1   // sigqueue(3)
	SITkill  int32 = -6   // tkill/tgkill
)

// SenderKind classifies a signal's si_code: "user", "kernel", "queue", "tkill" or "other".
func SenderKind(code int32) string {
	switch code {
	case SIUser:
		return "user"
	case SIKernel:
		return "kernel"
	case SIQueue:
		return "queue"
	case SITkill:
		return "tkill"
	}
	if code > 0 {
		return "kernel"
	}
	return "other"
}

// SignalEvent is a signal being generated; the header is the sender.
type SignalEvent struct {
	Header
	Signal         syscall.Signal `json:"signal"`
	Code           int32          `json:"code"`
	Result         SignalResult   `json:"result"`
	Group          bool           `json:"group"`
	TargetTGID     uint32         `json:"target_tgid"`
	TargetPID      uint32         `json:"target_pid"`
	TargetCgroupID uint64         `json:"target_cgroup_id"`
	TargetComm     string         `json:"target_comm"`
	// Disposition is the target's handler for the signal when it was sent.
	Disposition Disposition `json:"disposition"`
	// TargetNSInit: the target is PID 1 of its pid namespace, which drops
	// signals it has no handler for (other than SIGKILL/SIGSTOP from outside).
	TargetNSInit  bool `json:"target_ns_init,omitempty"`
	SenderWatched bool `json:"sender_watched,omitempty"`
	// SenderOutside: the sender is a process outside the tracer's pid
	// namespace (a host's process, when the node is itself a container):
	// it has no pid there, and TGID is 0.
	SenderOutside bool `json:"sender_outside,omitempty"`
}

// SignalDeliverEvent is a signal taken by the receiving task (the header).
type SignalDeliverEvent struct {
	Header
	Signal      syscall.Signal `json:"signal"`
	Code        int32          `json:"code"`
	Disposition Disposition    `json:"disposition"`
	SAFlags     uint64         `json:"sa_flags"`
}

// OOMEvent is an OOM kill. The header is the task in whose context the OOM
// killer ran (often the victim itself).
type OOMEvent struct {
	Header
	VictimTGID uint32 `json:"victim_tgid"`
	// VictimKnown: VictimCgroupID and VictimComm were read from the victim.
	VictimKnown    bool   `json:"victim_known"`
	VictimCgroupID uint64 `json:"victim_cgroup_id,omitempty"`
	VictimComm     string `json:"victim_comm,omitempty"`
	// HasRSS: the memory figures are valid (kernel >= 6.8).
	HasRSS      bool   `json:"has_rss"`
	TotalVMKB   uint64 `json:"total_vm_kb,omitempty"`
	AnonRSSKB   uint64 `json:"anon_rss_kb,omitempty"`
	FileRSSKB   uint64 `json:"file_rss_kb,omitempty"`
	ShmemRSSKB  uint64 `json:"shmem_rss_kb,omitempty"`
	OOMScoreAdj int32  `json:"oom_score_adj,omitempty"`
	// Memcgs are the memory cgroups of the header's task, its own first,
	// each with its local OOM count at the kill (empty without CONFIG_MEMCG
	// or in recordings from before they were read).
	Memcgs []MemcgOOMs `json:"memcgs,omitempty"`
}

// MemcgOOMs is one memory cgroup's local OOM count (memory.events.local
// "oom": how many times its own limit was hit and reclaim failed).
type MemcgOOMs struct {
	ID    uint64 `json:"id"`
	Level uint32 `json:"level"`
	OOMs  uint64 `json:"ooms"`
}

// CgroupEvent is a cgroup created (EventCgroupMkdir) or removed
// (EventCgroupRmdir); the header is the task that did it.
type CgroupEvent struct {
	Header
	ID          uint64 `json:"id"`
	Level       int32  `json:"level"`
	HierarchyID uint32 `json:"hierarchy_id"`
	Path        string `json:"path"`
}

// Counter is how many events of one type were sent and lost in the kernel.
type Counter struct {
	Emitted uint64
	Lost    uint64
}
