package names

// Miss is why a fact was not attached to any trace: the reason label of
// podchron_correlation_misses_total. Every drop in the model is one of
// these, so none is silent; MissReasons says what each means to an SRE.
type Miss string

// Miss reasons.
const (
	MissAPIAfterTraceEnd          Miss = "api_after_trace_end"
	MissEventAfterTraceEnd        Miss = "event_after_trace_end"
	MissRuntimeAfterTraceEnd      Miss = "runtime_after_trace_end"
	MissCgroupAfterTraceEnd       Miss = "cgroup_after_trace_end"
	MissEndedPodEvicted           Miss = "ended_pod_evicted"
	MissEndedBeforeRestart        Miss = "ended_before_restart"
	MissEmittedBeforeRestart      Miss = "emitted_before_restart"
	MissPodEndedBeforeStart       Miss = "pod_ended_before_start"
	MissPodUnconfirmed            Miss = "pod_unconfirmed"
	MissContainerEndedBefore      Miss = "container_ended_before_start"
	MissSessionUnnamedShutdown    Miss = "session_unnamed_at_shutdown"
	MissInitCorrected             Miss = "init_corrected"
	MissStartUnnamedContainer     Miss = "start_unnamed_container"
	MissStartWithoutTimes         Miss = "start_without_times"
	MissExecUnknownCgroup         Miss = "exec_unknown_cgroup"
	MissExitAfterTraceEnd         Miss = "exit_after_trace_end"
	MissExitUnknownCgroup         Miss = "exit_unknown_cgroup"
	MissSignalAfterTraceEnd       Miss = "signal_after_trace_end"
	MissSignalUnknownCgroup       Miss = "signal_unknown_cgroup"
	MissSignalUnknownContainer    Miss = "signal_unknown_container"
	MissOOMUnknownVictim          Miss = "oom_unknown_victim"
	MissOOMCountsReset            Miss = "oom_counts_reset"
	MissCNIAfterTraceEnd          Miss = "cni_after_trace_end"
	MissCNIUnknownPod             Miss = "cni_unknown_pod"
	MissSandboxWithoutPodUID      Miss = "sandbox_without_pod_uid"
	MissContainerWithoutPod       Miss = "container_without_pod"
	MissFactAfterAttemptRetire    Miss = "fact_after_attempt_retired"
	MissEventNamespaceMismatch    Miss = "event_namespace_mismatch"
	MissEventBufferFull           Miss = "event_buffer_full"
	MissEventUnknownPod           Miss = "event_unknown_pod"
	MissEndpointAfterTraceEnd     Miss = "endpoint_after_trace_end"
	MissEndpointUnknownPod        Miss = "endpoint_unknown_pod"
	MissEndpointServicesCapped    Miss = "endpoint_services_capped"
	MissEndpointNamespaceMismatch Miss = "endpoint_namespace_mismatch"
	MissAPIAfterProgress          Miss = "api_after_progress"
	MissKernelAfterProgress       Miss = "kernel_after_progress"
	MissRuntimeAfterProgress      Miss = "runtime_after_progress"
)

// MissReason says what a miss means: Usual ones come with normal
// operation (late words about an ended pod, a restart's hand-over) and
// lose nothing a trace should hold; the others are a step some trace
// lacks, or may lack.
type MissReason struct {
	Miss    Miss
	Usual   bool
	Meaning string
}

// MissReasons lists every reason, in the RUNBOOK's order (deploy's tests
// hold the RUNBOOK's table to it; the exporter starts each at 0, so an
// alert's increase() sees the first one).
var MissReasons = []MissReason{
	{MissAPIAfterTraceEnd, true, "An API server update of a pod whose trace had ended (the deletion of a Job's pod hours after it ended, a relist): dropped, so no second trace with the same IDs starts."},
	{MissEventAfterTraceEnd, true, "A Kubernetes Event about a pod whose trace had ended: dropped."},
	{MissRuntimeAfterTraceEnd, true, "A runtime fact about a pod whose trace had ended (its sandbox's or a container's removal, a relist): dropped."},
	{MissCNIAfterTraceEnd, true, "A CNI run after the pod's trace ended (the runtime's DEL again when the kubelet removes the sandbox): measured in podchron_cni_duration_seconds, not added to the trace."},
	{MissEndpointAfterTraceEnd, true, "An EndpointSlice change about a pod whose trace had ended (its endpoint removed once its object was gone): dropped."},
	{MissEndedBeforeRestart, true, "A fact about a pod whose trace the previous tracer instance on this node ended: dropped."},
	{MissEmittedBeforeRestart, true, "A span the previous tracer instance on this node already emitted: not emitted twice."},
	{MissPodEndedBeforeStart, true, "A pod whose trace ended before this instance started: remembered as ended, nothing emitted."},
	{MissPodUnconfirmed, true, "A pod known only from cgroup directories at start-up, gone before anything confirmed it: its end was the previous instance's to tell."},
	{MissContainerEndedBefore, true, "A container that had ended before this instance started, its end told by the previous instance: not told again."},
	{MissCgroupAfterTraceEnd, false, "A pod's or container's cgroup made after the pod's trace ended (the kubelet starting something of a pod whose containers had all ended and whose object was gone): not in any trace."},
	{MissEndedPodEvicted, false, "An ended pod's tombstone dropped at the cap (65,536 ended pods): a later fact about that pod could start a second trace."},
	{MissSessionUnnamedShutdown, false, "An exec session that ended at the tracer's shutdown before the pod's spec named its container: a hook, a probe and kubectl exec cannot be told apart, so it is not told."},
	{MissInitCorrected, false, "A container's init first taken to be another process, then corrected: spans emitted before the correction may name the wrong command."},
	{MissStartUnnamedContainer, false, "A start-up decided while one of the pod's containers had no name from any source: no container.start for it."},
	{MissStartWithoutTimes, false, "A named container whose creation or start no source dated by the start-up's end (one created and not yet started, with no status saying it started, is no miss: it did not start within the start-up): its container.start is missing."},
	{MissExecUnknownCgroup, false, "An exec in a watched cgroup the tracer never saw created (its cgroup_mkdir event lost, or made before the start-up scan): not in any trace."},
	{MissExitAfterTraceEnd, false, "A root process's exit in a pod's container cgroup after the pod's trace ended (a process the containers' stop left behind): not in the trace."},
	{MissExitUnknownCgroup, false, "A root process's exit in a watched cgroup the tracer never saw created."},
	{MissSignalAfterTraceEnd, false, "A signal to a process in a pod's container cgroup after the pod's trace ended: not in the trace."},
	{MissSignalUnknownCgroup, false, "A signal into a watched cgroup the tracer never saw created."},
	{MissSignalUnknownContainer, false, "A signal into a pod's cgroup that names no container the tracer knows."},
	{MissOOMUnknownVictim, false, "An OOM kill whose victim no known container holds (it was dying already, so no SIGKILL named it): when the limit that ran out was the pod's of the task that hit it, podchron_oom_kills_total counts it in the pod's namespace and the pod's root tells it; no span shows the victim."},
	{MissOOMCountsReset, false, "The per-memory-cgroup OOM counts were reset at their cap: the next OOM kill's scope (container, pod or node) may read as unknown."},
	{MissCNIUnknownPod, false, "A CNI run naming no pod the tracer knows (a sandbox whose pod was never seen): measured, not in any trace."},
	{MissSandboxWithoutPodUID, false, "A runtime sandbox without the pod UID label (not the kubelet's, or a runtime that does not label it): not in any trace."},
	{MissContainerWithoutPod, false, "A runtime container whose sandbox no known pod holds: not in any trace."},
	{MissFactAfterAttemptRetire, false, "A runtime fact about a container attempt whose spans were already out: not added."},
	{MissEventNamespaceMismatch, false, "A Kubernetes Event naming a pod of another namespace: ignored (whoever may create Events in a namespace can name any pod's UID)."},
	{MissEventBufferFull, false, "A Kubernetes Event for a pod not seen yet, dropped because the buffer of such Events was full."},
	{MissEventUnknownPod, false, "A Kubernetes Event held for a pod that was never seen on this node within its wait."},
	{MissEndpointUnknownPod, false, "An EndpointSlice change about a pod of this node the tracer has not seen (its pod watch behind the slices'): not in any trace."},
	{MissEndpointServicesCapped, false, "An EndpointSlice change about a pod already followed in 16 Services (a tenant can select one pod with any number): not in its trace, counted on its root."},
	{MissEndpointNamespaceMismatch, false, "An EndpointSlice naming a pod of another namespace: ignored (whoever may write EndpointSlices in a namespace can name any pod's UID)."},
	{MissAPIAfterProgress, false, "An API server fact older than the API source's progress mark: handled late, a decision may have been taken without it."},
	{MissKernelAfterProgress, false, "A kernel record older than the kernel source's progress mark (committed long after it was stamped, a vCPU stolen between): handled late, a decision may have been taken without it."},
	{MissRuntimeAfterProgress, false, "A runtime fact older than the runtime source's progress mark: handled late, a decision may have been taken without it."},
}
