// Package faults is the OTLP fault suite: the real exporter
// (internal/export/otlp, configured from the OTEL_* environment as the
// tracer configures it) against scripted in-process OTLP collectors on
// 127.0.0.1, over gRPC and HTTP. Each case drives spans through the exporter
// over time, asserts the exporter's invariants as a whole (every span
// offered is exported or dropped and counted, none arrives twice, memory
// stays bounded by the queue, export resumes within seconds) and prints its
// figures; `make faults` runs it and prints the table.
//
// TestClockStep drives a daemon-shaped pipeline (pipeline.Run over a
// clock.Timeline on a fake clock source, the lifecycle model, the same
// exporter) through wall clock steps of -1 h and +1 h in fake time.
//
// PODCHRON_FAULT_OUTAGE sets how long the collector stays down in the
// outage case (default 20s; the figure is for 10m).
package faults
