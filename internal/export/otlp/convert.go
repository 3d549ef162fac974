package otlp

import (
	"fmt"
	"time"

	"github.com/podchron/podchron/internal/span"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every exported span.
const ScopeName = "github.com/podchron/podchron"

// KeyValue converts a podchron attribute. Values of the documented types
// (string, int64, float64, bool, []string) map one to one; other integer,
// float and slice types are widened; anything else is rendered with
// fmt.Sprint so that no attribute is lost silently.
func KeyValue(a span.Attr) attribute.KeyValue {
	k := attribute.Key(a.Key)
	switch v := a.Value.(type) {
	case string:
		return k.String(v)
	case int64:
		return k.Int64(v)
	case float64:
		return k.Float64(v)
	case bool:
		return k.Bool(v)
	case []string:
		return k.StringSlice(v)
	case int:
		return k.Int(v)
	case int32:
		return k.Int64(int64(v))
	case int16:
		return k.Int64(int64(v))
	case int8:
		return k.Int64(int64(v))
	case uint32:
		return k.Int64(int64(v))
	case uint16:
		return k.Int64(int64(v))
	case uint8:
		return k.Int64(int64(v))
	case uint64:
		if v > 1<<63-1 {
			return k.String(fmt.Sprint(v))
		}
		return k.Int64(int64(v))
	case uint:
		if uint64(v) > 1<<63-1 {
			return k.String(fmt.Sprint(v))
		}
		return k.Int64(int64(v))
	case float32:
		return k.Float64(float64(v))
	case []int64:
		return k.Int64Slice(v)
	case []int:
		return k.IntSlice(v)
	case []float64:
		return k.Float64Slice(v)
	case []bool:
		return k.BoolSlice(v)
	case time.Duration:
		return k.String(v.String())
	case time.Time:
		return k.String(v.UTC().Format(time.RFC3339Nano))
	case fmt.Stringer:
		return k.String(v.String())
	case nil:
		return k.String("")
	}
	return k.String(fmt.Sprint(a.Value))
}

// KeyValues converts a list of attributes (nil for none).
func KeyValues(as []span.Attr) []attribute.KeyValue {
	if len(as) == 0 {
		return nil
	}
	out := make([]attribute.KeyValue, 0, len(as))
	for _, a := range as {
		if a.Key == "" {
			continue
		}
		out = append(out, KeyValue(a))
	}
	return out
}

// StatusCode maps a podchron status to an OpenTelemetry status code: an
// error is Error; success is left Unset, as the semantic conventions ask of
// instrumentation (Ok is the application's own override).
func StatusCode(s span.Status) codes.Code {
	if s == span.StatusError {
		return codes.Error
	}
	return codes.Unset
}

// ReadOnlySpan converts a podchron span into an SDK span snapshot that
// keeps podchron's own trace, span and parent ids and timestamps. res is the
// span's complete resource (see Exporter for how it is built).
func ReadOnlySpan(s span.Span, res *resource.Resource, scope instrumentation.Scope) sdktrace.ReadOnlySpan {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID:    trace.TraceID(s.TraceID),
		SpanID:     trace.SpanID(s.SpanID),
		TraceFlags: trace.FlagsSampled,
	})
	var parent trace.SpanContext
	if !s.Parent.IsZero() {
		parent = trace.NewSpanContext(trace.SpanContextConfig{
			TraceID:    trace.TraceID(s.TraceID),
			SpanID:     trace.SpanID(s.Parent),
			TraceFlags: trace.FlagsSampled,
		})
	}
	var events []sdktrace.Event
	if len(s.Events) > 0 {
		events = make([]sdktrace.Event, 0, len(s.Events))
		for _, ev := range s.Events {
			events = append(events, sdktrace.Event{
				Name:       ev.Name,
				Time:       ev.Time,
				Attributes: KeyValues(ev.Attrs),
			})
		}
	}
	st := sdktrace.Status{Code: StatusCode(s.Status)}
	if st.Code == codes.Error {
		// OTLP carries a description with error statuses only.
		st.Description = s.StatusMessage
	}
	return tracetest.SpanStub{
		Name:                 s.Name,
		SpanContext:          sc,
		Parent:               parent,
		SpanKind:             trace.SpanKindInternal,
		StartTime:            s.Start,
		EndTime:              s.End,
		Attributes:           KeyValues(s.Attrs),
		Events:               events,
		Status:               st,
		Resource:             res,
		InstrumentationScope: scope,
	}.Snapshot()
}
