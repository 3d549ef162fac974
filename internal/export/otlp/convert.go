// podchron spans as OTLP protobuf, built directly from span.Span.

package otlp

import (
	"fmt"
	"slices"
	"strings"

	"github.com/podchron/podchron/internal/span"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// ScopeName is the instrumentation scope of every exported span.
const ScopeName = "github.com/podchron/podchron"

// anyValue converts a podchron attribute value. span.Attr holds string,
// int64, float64, bool or []string; anything else is rendered with
// fmt.Sprint so that no attribute is lost silently.
func anyValue(v any) *commonpb.AnyValue {
	switch x := v.(type) {
	case string:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: x}}
	case int64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: x}}
	case float64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: x}}
	case bool:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: x}}
	case []string:
		vals := make([]*commonpb.AnyValue, len(x))
		for i, s := range x {
			vals[i] = anyValue(s)
		}
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}}
	case nil:
		return anyValue("")
	}
	return anyValue(fmt.Sprint(v))
}

// keyValues converts a list of attributes (nil for none); attributes
// without a key are left out.
func keyValues(as []span.Attr) []*commonpb.KeyValue {
	if len(as) == 0 {
		return nil
	}
	out := make([]*commonpb.KeyValue, 0, len(as))
	for _, a := range as {
		if a.Key == "" {
			continue
		}
		out = append(out, &commonpb.KeyValue{Key: a.Key, Value: anyValue(a.Value)})
	}
	return out
}

// statusCode maps a podchron status to OTLP's: an error is Error; success
// is left Unset, as the semantic conventions ask of instrumentation (Ok is
// the application's own override).
func statusCode(s span.Status) tracepb.Status_StatusCode {
	if s == span.StatusError {
		return tracepb.Status_STATUS_CODE_ERROR
	}
	return tracepb.Status_STATUS_CODE_UNSET
}

// protoSpan converts a podchron span, keeping its trace, span and parent
// ids and its timestamps.
func protoSpan(s span.Span) *tracepb.Span {
	out := &tracepb.Span{
		TraceId:           s.TraceID[:],
		SpanId:            s.SpanID[:],
		Name:              s.Name,
		Kind:              tracepb.Span_SPAN_KIND_INTERNAL,
		StartTimeUnixNano: unixNano(s.Start.UnixNano()),
		EndTimeUnixNano:   unixNano(s.End.UnixNano()),
		Attributes:        keyValues(s.Attrs),
		Status:            &tracepb.Status{Code: statusCode(s.Status)},
		// W3C flags "sampled", and the parent is known to be local: as
		// the SDK's exporters mark spans.
		Flags: 1 | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK),
	}
	if !s.Parent.IsZero() {
		out.ParentSpanId = s.Parent[:]
	}
	if s.Status == span.StatusError {
		// OTLP carries a description with error statuses only.
		out.Status.Message = s.StatusMessage
	}
	for _, ev := range s.Events {
		out.Events = append(out.Events, &tracepb.Span_Event{
			Name:         ev.Name,
			TimeUnixNano: unixNano(ev.Time.UnixNano()),
			Attributes:   keyValues(ev.Attrs),
		})
	}
	return out
}

// unixNano clamps times before 1970 (a zero time.Time) to 0.
func unixNano(n int64) uint64 { return uint64(max(n, 0)) }

// resources builds each span's complete resource: the service resource with
// the pod's own attributes on top. Spans of the same pod share one
// resource, built once and cached (the cache is cleared when it grows past
// limit).
type resources struct {
	schemaURL string
	base      []*commonpb.KeyValue
	baseIndex map[string]int
	cache     map[string]*resourcepb.Resource
	limit     int
}

func newResources(base *resource.Resource, limit int) *resources {
	r := &resources{baseIndex: map[string]int{}, limit: limit}
	if base != nil {
		r.schemaURL = base.SchemaURL()
		for _, kv := range base.Attributes() {
			r.baseIndex[string(kv.Key)] = len(r.base)
			r.base = append(r.base, &commonpb.KeyValue{Key: string(kv.Key), Value: sdkValue(kv.Value)})
		}
	}
	return r
}

// of returns the resource of a span whose pod attributes are attrs.
func (r *resources) of(attrs []span.Attr) *resourcepb.Resource {
	key := resourceKey(attrs)
	if res, ok := r.cache[key]; ok {
		return res
	}
	if r.cache == nil || len(r.cache) > r.limit {
		r.cache = map[string]*resourcepb.Resource{}
	}
	kvs := slices.Clone(r.base)
	for _, kv := range keyValues(attrs) {
		if i, ok := r.baseIndex[kv.Key]; ok {
			kvs[i] = kv // the pod's own value wins
			continue
		}
		kvs = append(kvs, kv)
	}
	res := &resourcepb.Resource{Attributes: kvs}
	r.cache[key] = res
	return res
}

func resourceKey(attrs []span.Attr) string {
	var b strings.Builder
	for _, a := range attrs {
		fmt.Fprintf(&b, "%q=%#v;", a.Key, a.Value)
	}
	return b.String()
}

// sdkValue converts an attribute of the service resource (built with the
// SDK's resource package from OTEL_RESOURCE_ATTRIBUTES and the detectors).
func sdkValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return anyValue(v.AsBool())
	case attribute.INT64:
		return anyValue(v.AsInt64())
	case attribute.FLOAT64:
		return anyValue(v.AsFloat64())
	case attribute.STRINGSLICE:
		return anyValue(v.AsStringSlice())
	}
	return anyValue(v.String())
}
