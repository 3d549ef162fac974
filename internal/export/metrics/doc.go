// Package metrics exposes podchron's Prometheus metrics and its health
// endpoints.
//
// Everything here lives on a registry the caller creates (NewRegistry, or any
// *prometheus.Registry): nothing touches client_golang's global registry, so
// tests and several podchrons in one process never collide.
//
//   - Recorder implements correlate.Observer: the lifecycle model's
//     measurements (startup and termination durations, exits, OOM kills, CNI
//     calls, signals, ...) become histograms, counters and a gauge.
//   - Small collectors, one concern a file, read the rest at scrape time:
//     kernel probe counters (probe.go), ring buffer reader health (reader.go),
//     span exporter stats (spans.go), build info (buildinfo.go), the state
//     of podchron's three sources (sourceup.go) and the process's resident
//     memory by part (memory.go: /proc/self/smaps and runtime/metrics).
//   - Health tracks liveness (a heartbeat from the main loop) and readiness
//     (which sources are up) for /healthz and /readyz.
//   - Server serves /metrics, /healthz and /readyz.
//
// Label values are bounded: pod names, container ids and other per-object
// values are never labels, and free-form values (namespaces, owner kinds,
// CNI plugin names, exit causes, ...) go through a per-label cap that folds
// values past it into "other" and counts the folding in
// podchron_label_values_folded_total{label}.
package metrics
