// Package measure is what the lifecycle model measures, for metrics: the
// Observer interface the model calls and the metrics exporter implements.
package measure

import "time"

// Observer receives the measurements the lifecycle model makes, for metrics.
// Label values are bounded: namespaces and owner kinds, never pod names.
type Observer interface {
	// PodSeen is called once per pod as soon as its namespace is known (its
	// first API server fact, or the first runtime or finished CNI ADD fact
	// naming the namespace), before any measurement of the pod that names
	// the namespace, and again only if the pod's namespace or owner kind
	// changes later (the owner kind is "none" until the API server's view
	// arrives). It lets metrics create a namespace's series at zero, so that
	// the first event in the namespace is an increase.
	PodSeen(namespace, ownerKind string)
	// PodStartup, PodStartupPhase, PodTermination and ContainerStop carry
	// the pod's trace ID (for exemplars).
	// longPole: the start-up's longest phase (names.Phase*).
	PodStartup(namespace, ownerKind, longPole string, d time.Duration, traceID string)
	PodStartupPhase(namespace, phase string, d time.Duration, traceID string) // phase: names.Phase*
	PodTermination(namespace, ownerKind string, d time.Duration, overrun bool, traceID string)
	ContainerStop(namespace string, d time.Duration, sigkill bool, traceID string)
	// PodNotReady: a readiness episode after the start-up (Ready lost)
	// ended, by Ready regained or by the pod's termination or end first,
	// after d; with the pod's trace ID.
	PodNotReady(namespace, ownerKind string, d time.Duration, traceID string)
	GracePeriodOverrun(namespace string)
	// EndpointWithdrawnLate: a terminating pod of namespace got its stop
	// signal before a Service withdrew it from its endpoints (by 100 ms
	// or more): requests may have met an app already shutting down.
	EndpointWithdrawnLate(namespace string)
	// EndpointWithdrawnAfterNotReady: a measured readiness episode of a pod
	// of namespace in which a Service withdrew the pod 1 s or more after it
	// lost Ready (the episode's message names it): requests went to a pod
	// failing its readiness probe meanwhile.
	EndpointWithdrawnAfterNotReady(namespace string)
	ContainerExit(namespace, cause string)
	OOMKill(namespace, scope string) // scope: memcg or node
	// OOMKillMisreported: the kernel OOM-killed a container's init and
	// the kubelet reported its end with reason (not OOMKilled).
	OOMKillMisreported(namespace, reason string)
	CNICall(plugin, command, result string, d time.Duration)
	Signal(signal, senderKind string) // senderKind: runtime, kubelet, in_pod, external, kernel
	CorrelationMiss(reason string)
	// SignalsThrottled: n signal records of a pod in namespace (""
	// when the cgroup is no known pod's) refused by its budget in the kernel.
	SignalsThrottled(namespace string, n uint64)
	StuckTerminating(namespace string, pod PodRef, stuck bool) // a pod entered (true) or left (false) the stuck state
}

// NopObserver discards measurements.
type NopObserver struct{}

// PodSeen discards the measurement.
func (NopObserver) PodSeen(string, string) {}

// PodStartup discards the measurement.
func (NopObserver) PodStartup(string, string, string, time.Duration, string) {}

// PodStartupPhase discards the measurement.
func (NopObserver) PodStartupPhase(string, string, time.Duration, string) {}

// PodTermination discards the measurement.
func (NopObserver) PodTermination(string, string, time.Duration, bool, string) {}

// ContainerStop discards the measurement.
func (NopObserver) ContainerStop(string, time.Duration, bool, string) {}

// PodNotReady discards the measurement.
func (NopObserver) PodNotReady(string, string, time.Duration, string) {}

// GracePeriodOverrun discards the measurement.
func (NopObserver) GracePeriodOverrun(string) {}

// EndpointWithdrawnLate discards the measurement.
func (NopObserver) EndpointWithdrawnLate(string) {}

// EndpointWithdrawnAfterNotReady discards the measurement.
func (NopObserver) EndpointWithdrawnAfterNotReady(string) {}

// ContainerExit discards the measurement.
func (NopObserver) ContainerExit(string, string) {}

// OOMKill discards the measurement.
func (NopObserver) OOMKill(string, string) {}

// OOMKillMisreported discards the measurement.
func (NopObserver) OOMKillMisreported(string, string) {}

// CNICall discards the measurement.
func (NopObserver) CNICall(string, string, string, time.Duration) {}

// Signal discards the measurement.
func (NopObserver) Signal(string, string) {}

// CorrelationMiss discards the measurement.
func (NopObserver) CorrelationMiss(string) {}

// SignalsThrottled discards the measurement.
func (NopObserver) SignalsThrottled(string, uint64) {}

// StuckTerminating discards the measurement.
func (NopObserver) StuckTerminating(string, PodRef, bool) {}

// PodRef names a pod in a measurement that leads to it (its trace).
type PodRef struct {
	Name, UID, TraceID string
}
