package names

// Span names: one trace per pod, its root span "pod", a span per phase.
const (
	SpanCNIPrefix           = "cni."
	SpanContainerBackoff    = "container.backoff"
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
)

// Span event names.
const (
	EventAPIObjectDeleted        = "podchron.api_object_deleted"
	EventOOMKill                 = "oom_kill"
	EventReadyAfterStartupGaveUp = "podchron.ready_after_startup_gave_up"
	EventRuntimeGap              = "podchron.runtime_gap"
	EventSandboxChanged          = "podchron.sandbox_changed"
	EventSignal                  = "signal"
	EventSignalsFolded           = "podchron.signals_folded"
	EventStuckTerminating        = "podchron.stuck_terminating"
	EventsFolded                 = "podchron.events.folded"
	EventsLost                   = "podchron.events_lost"
)
