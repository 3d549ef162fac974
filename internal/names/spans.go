package names

// Span names: one trace per pod, its root span "pod", a span per phase.
const (
	SpanCNIPrefix           = "cni."
	SpanContainerBackoff    = "container.backoff"
	SpanContainerEphemeral  = "container.ephemeral" // a kubectl debug container's run
	SpanContainerExec       = "container.exec"
	SpanContainerImagePull  = "container.image_pull"
	SpanContainerInit       = "container.init"
	SpanContainerPostStart  = "container.poststart"
	SpanContainerPreStop    = "container.prestop"
	SpanContainerRun        = "container.run"
	SpanContainerStart      = "container.start"
	SpanContainerStop       = "container.stop"
	SpanPod                 = "pod"
	SpanPodCleanup          = "pod.cleanup"
	SpanPodSandbox          = "pod.sandbox"
	SpanPodScheduling       = "pod.scheduling"
	SpanPodStartup          = "pod.startup"
	SpanPodTerminationStuck = "pod.termination.stuck"
	SpanPodTermination      = "pod.termination"
	// SpanPodRestart: an in-place restart of the whole pod (Kubernetes
	// 1.35+, a RestartAllContainers restart rule): from the exit that
	// matched the rule until the pod is Ready again.
	SpanPodRestart = "pod.restart"
	// SpanPodImageVolumePull: the pull of an image volume's image
	// (Kubernetes 1.31+, GA in 1.36), which belongs to no container: the
	// kubelet pulls it before the pod's first container.
	SpanPodImageVolumePull = "pod.image_volume_pull"
)

// Span event names. The composed ones are built by SignalEventName and
// K8sEventName.
const (
	EventAPIObjectDeleted = "podchron.api_object_deleted"
	// EventCorrelationMiss: on a pod's root, a fact about the pod that
	// the model counted as a miss (podchron_correlation_misses_total)
	// instead of telling it: the trace lacks, or may lack, a step.
	EventCorrelationMiss = "podchron.correlation_miss"
	EventK8sPrefix       = "k8s."
	EventOOMKill         = "oom_kill"
	// EventOOMMisreported: on a pod's root, a container whose init the
	// kernel OOM-killed and whose end the kubelet reported with another
	// reason than OOMKilled (its runtime missed the OOM event).
	EventOOMMisreported          = "podchron.oom_kill.misreported"
	EventProbeFailed             = "probe failed"
	EventReadyAfterStartupGaveUp = "podchron.ready_after_startup_gave_up"
	EventRuntimeGap              = "podchron.runtime_gap"
	EventSandboxChanged          = "podchron.sandbox_changed"
	EventSignal                  = "signal" // and the signal's name: SignalEventName
	EventSignalsFolded           = "podchron.signals_folded"
	EventSignalsThrottled        = "podchron.signals_throttled"
	// EventSpansDropped: on a pod's root, spans of its trace that the
	// exporter dropped before the root went (podchron_spans_dropped_total:
	// a full queue, a batch the collector refused or never took, a span
	// too large to send): the trace lacks them.
	EventSpansDropped     = "podchron.spans_dropped"
	EventStuckTerminating = "podchron.stuck_terminating"
	EventsFolded          = "podchron.events.folded"
	EventsLost            = "podchron.events_lost"
	// EventPreStopRerun: the kubelet restarted mid-termination, ran the
	// preStop hook again and began a new grace period.
	EventPreStopRerun = "podchron.prestop_rerun"
)

// SignalEventName names a signal's event on a container's run span: "signal"
// and the signal's name ("signal SIGTERM").
func SignalEventName(sig string) string { return EventSignal + " " + sig }

// K8sEventName names a Kubernetes event's event on the pod's root span:
// "k8s." and the event's reason ("k8s.Killing").
func K8sEventName(reason string) string { return EventK8sPrefix + reason }

// Readiness after the start-up and readiness gates: events on the pod's
// root span and its start-up.
const (
	SpanPodNotReady = "pod.not_ready" // Ready lost after the start-up, until regained
	// In-place resize: the pod's PodResizePending and PodResizeInProgress
	// conditions as root events (resize.go).
	EventResizePending        = "podchron.resize.pending"
	EventResizeInProgress     = "podchron.resize.in_progress"
	EventResizeDone           = "podchron.resize.done"
	EventReadinessLost        = "podchron.readiness.lost"
	EventReadinessRegained    = "podchron.readiness.regained"
	EventReadinessGatesWaited = "podchron.readiness_gates.waited"
	// EventEndpointReady: on the root, a Service first listing the pod
	// ready in its EndpointSlices (traffic is sent to it from then on).
	EventEndpointReady = "podchron.endpoint.ready"
	// EventEndpointWithdrawn: on pod.termination, a Service withdrawing
	// the pod from its ready endpoints once the termination began.
	EventEndpointWithdrawn = "podchron.endpoint.withdrawn"
)
