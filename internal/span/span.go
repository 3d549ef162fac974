// Package span holds what leaves the lifecycle model: finished spans, their
// attributes and events, the trace and span IDs derived from stable facts,
// and the Sink that exporters implement. Exporters import this package, not
// the model.
package span

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// TraceID is a 16-byte trace id. Every phase of a pod, from any tracer
// instance or restart, lands in the same trace: the id is derived from the
// pod UID alone.
type TraceID [16]byte

// SpanID is an 8-byte span id, derived from the trace id and the span's
// stable key, so replays and restarts produce the same ids.
type SpanID [8]byte

func (t TraceID) String() string { return hex.EncodeToString(t[:]) }
func (s SpanID) String() string  { return hex.EncodeToString(s[:]) }

// IsZero reports whether the id is unset.
func (s SpanID) IsZero() bool { return s == SpanID{} }

// TraceIDForPod derives a pod's trace id from its UID.
func TraceIDForPod(uid string) TraceID {
	sum := sha256.Sum256([]byte("podchron/pod/" + uid))
	var t TraceID
	copy(t[:], sum[:16])
	return t
}

// SpanIDFor derives a span id from the trace and a key that names the span
// uniquely within the pod's life ("root", "startup", "container/app/0/run").
func SpanIDFor(t TraceID, key string) SpanID {
	h := sha256.New()
	h.Write(t[:])
	h.Write([]byte(key))
	var sum [32]byte
	h.Sum(sum[:0])
	var s SpanID
	copy(s[:], sum[:8])
	if binary.BigEndian.Uint64(s[:]) == 0 {
		s[7] = 1
	}
	return s
}

// RootKey is the key of a pod's root span ("pod"), the last of its trace.
const RootKey = "root"

// RootSpanID is the ID of the root span ("pod") of a pod's trace.
func RootSpanID(t TraceID) SpanID { return SpanIDFor(t, RootKey) }

// Status is a span's outcome.
type Status int

// Span statuses, as OpenTelemetry's.
const (
	StatusUnset Status = iota
	StatusOK
	StatusError
)

func (s Status) String() string {
	switch s {
	case StatusOK:
		return "ok"
	case StatusError:
		return "error"
	}
	return "unset"
}

// Attr is a span or event attribute. Values are string, int64, float64,
// bool or []string; keys follow OpenTelemetry semantic conventions where
// one exists (k8s.pod.uid, container.id, process.pid, ...) and use the
// podchron.* namespace otherwise.
type Attr struct {
	Key   string
	Value any
}

// String builds a string attribute.
func String(k, v string) Attr { return Attr{k, v} }

// Int builds an integer attribute.
func Int(k string, v int64) Attr { return Attr{k, v} }

// Bool builds a boolean attribute.
func Bool(k string, v bool) Attr { return Attr{k, v} }

// Float builds a floating-point attribute.
func Float(k string, v float64) Attr { return Attr{k, v} }

// Strings builds a string-slice attribute (a copy of v).
func Strings(k string, v ...string) Attr {
	return Attr{k, append([]string(nil), v...)}
}

// SpanEvent is a point in time inside a span (a signal, an OOM kill, a gap).
type SpanEvent struct {
	Name  string
	Time  time.Time
	Attrs []Attr
}

// Span is one finished phase of a pod's lifecycle. The correlator emits a
// span once its phase has ended; the pod's root span comes last, when the
// pod is gone (or when the tracer shuts down, marked unfinished).
type Span struct {
	TraceID TraceID
	SpanID  SpanID
	Parent  SpanID // zero for the pod's root span
	Name    string
	Start   time.Time
	End     time.Time
	Status  Status
	// StatusMessage explains an error status ("grace period overrun by 1.2s").
	StatusMessage string
	Attrs         []Attr
	Events        []SpanEvent
	// Resource attributes of the pod (k8s.pod.uid, k8s.pod.name,
	// k8s.namespace.name, k8s.node.name), the same on every span of the trace.
	Resource []Attr
}

// Duration is End - Start.
func (s Span) Duration() time.Duration { return s.End.Sub(s.Start) }

// Attr returns the value of the attribute k, or nil.
func (s Span) Attr(k string) any { return Lookup(s.Attrs, k) }

// Attr returns the value of the event's attribute k, or nil.
func (e SpanEvent) Attr(k string) any { return Lookup(e.Attrs, k) }

// Lookup returns the value of the attribute k among as (a span's, an
// event's or a resource's), or nil.
func Lookup(as []Attr, k string) any {
	for _, a := range as {
		if a.Key == k {
			return a.Value
		}
	}
	return nil
}

// Sink receives finished spans. Implementations must not block for long:
// exporters queue (bounded) and count what they drop.
type Sink interface {
	Emit(Span)
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(Span)

// Emit calls f.
func (f SinkFunc) Emit(s Span) { f(s) }
