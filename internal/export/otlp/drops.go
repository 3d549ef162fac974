// Spans that were not delivered, counted by why.

package otlp

// Drops counts dropped spans by reason.
type Drops struct {
	// QueueFull: Emit found the queue full (collector slow or down).
	QueueFull uint64
	// ExportFailed: the batch still failed when its retry time ran out, or
	// the collector rejected it with a status that must not be retried
	// (gRPC InvalidArgument, Unauthenticated, ...; HTTP 400, 401, 413, ...).
	ExportFailed uint64
	// Shutdown: emitted after Shutdown, or still queued when Shutdown's
	// context ended.
	Shutdown uint64
	// Rejected: the collector accepted the batch but rejected these spans
	// (OTLP partial success); the rest of the batch counts as exported.
	Rejected uint64
	// TooLarge: a span whose encoding alone exceeds the batch byte budget.
	TooLarge uint64
}

// Total is the sum over all reasons.
func (d Drops) Total() uint64 {
	return d.QueueFull + d.ExportFailed + d.Shutdown + d.Rejected + d.TooLarge
}

// ByReason returns the counts keyed by reason (queue_full, export_failed,
// shutdown, rejected, too_large), every reason present.
func (d Drops) ByReason() map[string]uint64 {
	return map[string]uint64{
		ReasonQueueFull:    d.QueueFull,
		ReasonExportFailed: d.ExportFailed,
		ReasonShutdown:     d.Shutdown,
		ReasonRejected:     d.Rejected,
		ReasonTooLarge:     d.TooLarge,
	}
}
