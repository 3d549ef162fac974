package names

// Cause is why a container's init process ended (podchron.exit.cause).
type Cause string

// Exit causes.
const (
	CauseCompleted           Cause = "completed"             // exited 0, or stopped and exited gracefully
	CauseError               Cause = "error"                 // exited non-zero on its own
	CauseOOMKilled           Cause = "oom_killed"            // the OOM killer killed the init
	CauseLivenessRestart     Cause = "liveness_restart"      // stopped after a failed liveness probe
	CauseStartupProbeRestart Cause = "startup_probe_restart" // stopped after a failed startup probe
	CauseKilledByRuntime     Cause = "killed_by_runtime"     // signalled by the runtime or the kubelet
	CauseKilledInPod         Cause = "killed_in_pod"         // signalled by a process of the pod
	CauseKilledExternal      Cause = "killed_external"       // signalled by a process outside the pod
	CauseSignal              Cause = "signal"                // died of a signal the kernel sent (a fault)
	CauseEvicted             Cause = "evicted"               // drained, node-pressure eviction, taint, shutdown
	CausePreempted           Cause = "preempted"             // preempted by the scheduler
	CauseDeletedByPodGC      Cause = "deleted_by_pod_gc"     // the pod garbage collector deleted it
	CauseDisrupted           Cause = "disrupted"             // another DisruptionTarget reason
	CauseUnknown             Cause = "unknown"               // removed before its exit was seen
	// CauseKubeletRestart: the kubelet stopped the container with no
	// termination of its pod in progress (a failed postStart hook, a
	// resize that restarts, a changed definition, a changed sandbox);
	// podchron.kubelet_restart.reason says which, when a fact gives it.
	CauseKubeletRestart Cause = "kubelet_restart"
	// CauseRestartRule: the container exited on its own with a code one of
	// its restartPolicyRules answers (Kubernetes 1.34+): the kubelet
	// restarts it (Restart), or every container of the pod
	// (RestartAllContainers), whatever the restart policy says.
	// podchron.restart_rule names the rule; the span is an ERROR only for
	// a non-zero exit.
	CauseRestartRule Cause = "restart_rule"
)

// Why the kubelet restarted a container (podchron.kubelet_restart.reason).
const (
	KubeletRestartPostStart  = "poststart_hook_failed"
	KubeletRestartResize     = "resize"
	KubeletRestartDefinition = "definition_changed"
	KubeletRestartSandbox    = "sandbox_changed"
	// KubeletRestartAllContainers: a sibling's exit matched its
	// RestartAllContainers rule (the pod's AllContainersRestarting
	// condition): every container stopped, init containers run again.
	KubeletRestartAllContainers = "restart_all_containers"
	KubeletRestartUnknown       = "unknown" // no fact named the reason
)

// SenderKind is who sent a signal (podchron.signal.sender.kind).
type SenderKind string

// Signal sender kinds.
const (
	SenderKernel   SenderKind = "kernel"   // the kernel (a fault, the OOM killer, a pid namespace teardown)
	SenderRuntime  SenderKind = "runtime"  // the container runtime (containerd, runc, crun, CRI-O…)
	SenderKubelet  SenderKind = "kubelet"  // the kubelet itself
	SenderInPod    SenderKind = "in_pod"   // a process of the same pod
	SenderExternal SenderKind = "external" // any other process of the node
)

// Exec session kinds: what a process started in a container from outside
// it is.
const (
	SessionPostStart      = "poststart"
	SessionPreStop        = "prestop"
	SessionProbeStartup   = "probe.startup"
	SessionProbeReadiness = "probe.readiness"
	SessionProbeLiveness  = "probe.liveness"
	SessionExec           = "exec"
)

// Exec probe results (podchron.probe.result).
const (
	ProbeSuccess = "success"
	ProbeFailure = "failure"
	ProbeKilled  = "killed"
)

// Start-up outcomes when a pod never became Ready (podchron.startup.outcome).
const (
	StartupGone       = "gone"
	StartupCompleted  = "completed"
	StartupFailed     = "failed"
	StartupGaveUp     = "gave_up"
	StartupTerminated = "terminated"
)

// OOM kill scopes (podchron.oom.scope): which limit ran out, from the
// kernel's own count of the memory cgroup that hit its limit (see
// internal/correlate/oom.go).
const (
	// OOMScopeContainer: the container's own memory limit.
	OOMScopeContainer = "container"
	// OOMScopePod: the pod-level cgroup's limit (the sum of its containers'
	// limits, which the pod reaches first when every container has one).
	OOMScopePod = "pod"
	// OOMScopeNodeAllocatable: the kubepods (or a QoS) cgroup's limit, that
	// is the node's allocatable memory for pods.
	OOMScopeNodeAllocatable = "node_allocatable"
	// OOMScopeNode: no memory cgroup ran out: the node itself (the global
	// OOM killer, or a cpuset/mempolicy constraint).
	OOMScopeNode = "node"
	// OOMScopeUnknown: the kernel did not say (no memory controller, or a
	// recording from before the counters were read).
	OOMScopeUnknown = "unknown"
)

// OOMScopes lists the scope values, for metric labels.
var OOMScopes = []string{OOMScopeContainer, OOMScopePod, OOMScopeNodeAllocatable, OOMScopeNode, OOMScopeUnknown}

// Start-up phases (podchron_pod_startup_phase_duration_seconds{phase}).
const (
	PhaseScheduling = "scheduling"
	PhaseSandbox    = "sandbox"
	PhaseImagePull  = "image_pull"
	PhaseInit       = "init"
	PhaseStart      = "start"
	PhaseReadiness  = "readiness"
)

// StartupPhases lists the phases, for metric labels.
var StartupPhases = []string{PhaseScheduling, PhaseSandbox, PhaseImagePull, PhaseInit, PhaseStart, PhaseReadiness}
