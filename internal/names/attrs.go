// Package names is podchron's vocabulary: every span name, span event name
// and attribute key the tracer emits, in one place, for the model, the
// exporters, the deploy files' tests and the end-to-end assertions. A name
// spelled as a literal elsewhere is a name that can silently drift.
package names

// Standard OpenTelemetry keys (semantic conventions v1.43, as in go.mod;
// names_test.go checks each against the semconv package).
const (
	ContainerID             = "container.id"
	ContainerImageName      = "container.image.name"
	ContainerImageTags      = "container.image.tags"
	ContainerRuntimeName    = "container.runtime.name"
	ContainerRuntimeVersion = "container.runtime.version"
	K8sReplicaSetName       = "k8s.replicaset.name"
	K8sReplicaSetUID        = "k8s.replicaset.uid"
	K8sDeploymentName       = "k8s.deployment.name"
	K8sStatefulSetName      = "k8s.statefulset.name"
	K8sStatefulSetUID       = "k8s.statefulset.uid"
	K8sDaemonSetName        = "k8s.daemonset.name"
	K8sDaemonSetUID         = "k8s.daemonset.uid"
	K8sJobName              = "k8s.job.name"
	K8sJobUID               = "k8s.job.uid"
	// K8sPodLabelPrefix + a label's key: that label's value.
	K8sPodLabelPrefix        = "k8s.pod.label."
	ErrorType                = "error.type"
	HostName                 = "host.name"
	K8sClusterName           = "k8s.cluster.name"
	K8sContainerRestartCount = "k8s.container.restart_count"
	K8sPodStatusPhase        = "k8s.pod.status.phase"
	K8sContainerName         = "k8s.container.name"
	K8sNamespaceName         = "k8s.namespace.name"
	K8sNodeName              = "k8s.node.name"
	K8sPodName               = "k8s.pod.name"
	K8sPodUID                = "k8s.pod.uid"
	K8sVolumeName            = "k8s.volume.name"
	K8sServiceName           = "k8s.service.name"
	ProcessCommandArgs       = "process.command_args"
	ProcessExitCode          = "process.exit.code"
	ProcessPID               = "process.pid"
	ServiceName              = "service.name"
	ServiceVersion           = "service.version"
)

// podchron's own keys: under the project's namespace, never under a
// standard one (k8s., container., process.).
const (
	BackoffSeconds       = "podchron.backoff.seconds"
	CNICommand           = "podchron.cni.command"
	CNIDelRuns           = "podchron.cni.del_runs"
	CNIIfName            = "podchron.cni.ifname"
	CNINetNS             = "podchron.cni.netns"
	CNIPlugin            = "podchron.cni.plugin"
	Degraded             = "podchron.degraded"
	DisruptionReason     = "podchron.disruption.reason"
	ExitCause            = "podchron.exit.cause"
	GapUntil             = "podchron.gap.until"
	GracePeriodOverrun   = "podchron.grace_period.overrun"
	GracePeriodSeconds   = "podchron.grace_period.seconds"
	K8sEventCount        = "podchron.k8s_event.count"
	K8sEventReason       = "podchron.k8s_event.reason"
	KubeletRestartReason = "podchron.kubelet_restart.reason"
	// RestartRule: the restartPolicyRules entry an exit matched ("Restart
	// on exit code In [42]"), on the run that ended and, for
	// RestartAllContainers, on its siblings the kubelet stopped.
	RestartRule = "podchron.restart_rule"
	// ResizeSeconds: how long an in-place resize was in progress.
	ResizeSeconds        = "podchron.resize.seconds"
	LingeringContainers  = "podchron.lingering.containers"
	LossUntil            = "podchron.loss.until"
	OOMAnonRSSKB         = "podchron.oom.anon_rss_kb"
	OOMKillsFolded       = "podchron.oom.kills_folded"
	OOMMemcg             = "podchron.oom.memcg"
	OOMScope             = "podchron.oom.scope"
	OOMVictimComm        = "podchron.oom.victim.comm"
	OOMVictimPID         = "podchron.oom.victim.pid"
	ObservedFrom         = "podchron.observed_from"
	OwnerKind            = "podchron.owner.kind"
	OwnerName            = "podchron.owner.name"
	PastDeadlineSeconds  = "podchron.past_deadline.seconds"
	PodMirrorUID         = "podchron.pod.mirror_uid"
	ProbeFailuresFolded  = "podchron.probe_failures.folded"
	ProbeResult          = "podchron.probe.result"
	ProbeType            = "podchron.probe.type"
	QoSClass             = "podchron.qos_class"
	SandboxOldID         = "podchron.sandbox.old_id"
	SandboxRecreated     = "podchron.sandbox.recreated"
	SessionsFoldedPrefix = "podchron.sessions.folded."
	Sigkill              = "podchron.sigkill"
	SignalName           = "podchron.signal.name"
	SignalDisposition    = "podchron.signal.disposition"
	SignalPIDNSInit      = "podchron.signal.pidns_init"
	SignalResult         = "podchron.signal.result"
	SignalSender         = "podchron.signal.sender"
	SignalSenderComm     = "podchron.signal.sender.comm"
	SignalSenderKind     = "podchron.signal.sender.kind"
	SignalSenderPID      = "podchron.signal.sender.pid"
	SignalToChild        = "podchron.signal.to_child"
	SignalsFolded        = "podchron.signals.folded"
	SignalsThrottled     = "podchron.signals.throttled" // signal records the pod's budget in the kernel refused
	StartupOutcome       = "podchron.startup.outcome"
	StartupSeconds       = "podchron.startup.seconds"
	TerminationForced    = "podchron.termination.forced"
	TerminationReason    = "podchron.termination.reason"
	TerminationStuck     = "podchron.termination.stuck"
	WaitingReason        = "podchron.waiting.reason"
)

// Message is free text for a person reading the trace, on spans (an image
// pull's failure, a termination's reason, why a container ended) and on
// span events (what a Kubernetes Event said). It is neither a
// semantic-convention key (the conventions have none for free text on a
// span; a log record's text is its body) nor one of podchron's own
// podchron.* keys: the bare key is what the traces have always carried,
// and it stays so that existing queries keep finding it.
const Message = "message"

// MissReasonKey: on a podchron.correlation_miss event, the miss's reason
// (a Miss: the reason label of podchron_correlation_misses_total);
// MissCount: how many misses of that reason (and container) the event
// tells.
const (
	MissReasonKey = "podchron.miss.reason"
	MissCount     = "podchron.miss.count"
)

// DropReason: on a podchron.spans_dropped event, why the exporter dropped
// the spans (the reason label of podchron_spans_dropped_total); DropCount:
// how many spans of the trace it dropped for that reason.
const (
	DropReason = "podchron.drop.reason"
	DropCount  = "podchron.drop.count"
)

// Byte bounds: what the model cut from tenant text and from spans over its
// span byte cap.
const (
	// TextTruncatedBytes: bytes of tenant text (Event messages and
	// reasons, probe output, argv, label values, status messages) cut to
	// the byte caps; on a span, the sum for the span and its events; on a
	// span event, what was cut from that event.
	TextTruncatedBytes = "podchron.text.truncated_bytes"
	// SpanEventsDropped: events taken off a span to keep it within the
	// model's span byte cap (the last ones go first).
	SpanEventsDropped = "podchron.span.events_dropped"
	// SpanTruncatedBytes: the estimated encoded bytes taken off a span to
	// keep it within the span byte cap (dropped events and attributes).
	SpanTruncatedBytes = "podchron.span.truncated_bytes"
)

// Hooks the kubelet runs itself (sleep, httpGet: nothing in the container
// for the kernel to see) and the grace period they leave to the app.
const (
	HookHandler      = "podchron.hook.handler" // exec, sleep, httpGet, tcpSocket
	HookSleepSeconds = "podchron.hook.sleep_seconds"
	HookHTTPPath     = "podchron.hook.http_path"
	HookHTTPPort     = "podchron.hook.http_port"
	// GraceLeftSeconds: the grace period the app had between the stop
	// signal and SIGKILL after its preStop hook (the kubelet's 2 s minimum
	// when the hook used the rest).
	GraceLeftSeconds = "podchron.grace_left_seconds"
	// GraceUsedByPreStop: a preStop hook used the grace period; the
	// kubelet gave the app only its 2 s minimum.
	GraceUsedByPreStop = "podchron.grace_period.used_by_prestop"
)

// A Service's endpoint of the pod (podchron.endpoint.withdrawn): removed
// from its slices, or its conditions then; listed: found so by a list
// (the tracer's start, a relist), so it happened at or before the event.
const (
	EndpointRemoved     = "podchron.endpoint.removed"
	EndpointServing     = "podchron.endpoint.serving"
	EndpointTerminating = "podchron.endpoint.terminating"
	EndpointListed      = "podchron.endpoint.listed"
)

// Readiness after the start-up and readiness gates.
const (
	// ReadinessGatesWaitSeconds: how long readiness gates held a pod whose
	// containers were ready.
	ReadinessGatesWaitSeconds = "podchron.readiness_gates.wait.seconds"
	// ReadinessProbeOutput: what the failing readiness probe said (the
	// kubelet's Unhealthy message), or its exit when only the kernel saw it.
	ReadinessProbeOutput = "podchron.readiness.probe_output"
	// ReadinessNotReady: the containers not ready when the pod lost readiness.
	ReadinessNotReady = "podchron.readiness.not_ready"
	// NotReadySeconds: how long an episode of lost readiness lasted (on
	// the root's event, past the span cap).
	NotReadySeconds = "podchron.readiness.not_ready.seconds"
	// ReadinessLateWithdrawal: on the root's event past the span cap, the
	// words pod.not_ready's message would end with: a Service withdrew
	// the pod late after it lost Ready.
	ReadinessLateWithdrawal = "podchron.readiness.late_withdrawal"
)

// The verdict and the start-up's long pole (internal/correlate/verdict.go).
const (
	// Verdict: what happened, in plain words, on the root span (the whole
	// lifecycle) and on each phase span (that phase).
	Verdict = "podchron.verdict"
	// StartupLongPole: the start-up phase that took longest (Phase*), on
	// pod.startup and the root.
	StartupLongPole = "podchron.startup.long_pole"
	// StartupLongPoleSeconds: how long the long pole took.
	StartupLongPoleSeconds = "podchron.startup.long_pole_seconds"
)

// Semantic-convention status keys (v1.43) beside podchron's own.
const (
	// K8sContainerStatusLastTerminatedReason: why a container's run ended,
	// as Kubernetes writes it (OOMKilled, Error, Completed,
	// ContainerCannotRun, ...): the runtime's reason, else the API status's.
	K8sContainerStatusLastTerminatedReason = "k8s.container.status.last_terminated_reason"
	// K8sPodStatusReason: the pod status's reason (Evicted, NodeLost,
	// Shutdown, UnexpectedAdmissionError, ...).
	K8sPodStatusReason = "k8s.pod.status.reason"
)
