package names

// Prometheus label names of podchron's metrics (internal/export/metrics).
// Dashboards, alerts and recording rules select on them: renaming one is a
// breaking change. The sources' label values are Source.Label's.
const (
	LabelCause      = "cause"       // a container exit's cause (Cause)
	LabelCommand    = "command"     // a CNI command: ADD, DEL, CHECK…
	LabelGoVersion  = "goversion"   // the Go version podchron was built with
	LabelKernel     = "kernel"      // the node's kernel release
	LabelLabel      = "label"       // the label whose values were folded into "other"
	LabelLongPole   = "long_pole"   // a start-up's longest phase (StartupPhases)
	LabelMetric     = "metric"      // the histogram a negative duration was left out of
	LabelNamespace  = "namespace"   // the pod's namespace
	LabelOverrun    = "overrun"     // "true" when a container outlived the grace period
	LabelOwnerKind  = "owner_kind"  // the pod's controller's kind
	LabelPart       = "part"        // a part of the tracer's resident memory (podchron_process_memory_bytes)
	LabelPhase      = "phase"       // a start-up phase (StartupPhases)
	LabelPlugin     = "plugin"      // a CNI plugin
	LabelPod        = "pod"         // the pod's name
	LabelReason     = "reason"      // why a fact was not attached, a span was dropped, or the kubelet says a container ended
	LabelResult     = "result"      // a CNI run's result: ok or error
	LabelScope      = "scope"       // the limit an OOM kill ran out of (OOMScopes)
	LabelSenderKind = "sender_kind" // who sent a signal (SenderKind)
	LabelSigkill    = "sigkill"     // "true" when a container had to be SIGKILLed
	LabelSignal     = "signal"      // a signal's name
	LabelSource     = "source"      // a source (Source.Label)
	LabelSpan       = "span"        // a span's kind: its name up to the first space (podchron_span_delivery_lag_seconds)
	LabelTraceID    = "trace_id"    // a trace's ID (also the exemplars' label)
	LabelType       = "type"        // a kernel event type
	LabelUID        = "uid"         // the pod's UID
	LabelVersion    = "version"     // podchron's version
)
