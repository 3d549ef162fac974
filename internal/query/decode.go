// Package query reads podchron's traces back from a trace back end —
// Jaeger's public api/v3 and Tempo's trace-by-ID API — and turns the OTLP
// JSON they answer with into internal/span values, so the console renderer
// can print a pod's timeline from a back end as the tracer prints it live.
package query

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/podchron/podchron/internal/span"
)

// DecodeOTLP decodes OTLP JSON (a TracesData: {"resourceSpans": [...]})
// into spans, sorted by start time. Trace and span IDs may be hex (the OTLP
// JSON encoding, as Jaeger writes them) or base64 (the protobuf JSON
// mapping, as some Tempo versions write them).
func DecodeOTLP(data []byte) ([]span.Span, error) {
	data, err := hexIDs(data)
	if err != nil {
		return nil, err
	}
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(data)
	if err != nil {
		return nil, fmt.Errorf("decode OTLP JSON: %w", err)
	}
	return fromTraces(td), nil
}

// fromTraces flattens pdata traces into spans.
func fromTraces(td ptrace.Traces) []span.Span {
	var out []span.Span
	rss := td.ResourceSpans()
	for i := range rss.Len() {
		rs := rss.At(i)
		res := attrs(rs.Resource().Attributes())
		sss := rs.ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				out = append(out, fromSpan(spans.At(k), res))
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Start.Before(out[b].Start) })
	return out
}

func fromSpan(s ptrace.Span, res []span.Attr) span.Span {
	sp := span.Span{
		TraceID:       span.TraceID(s.TraceID()),
		SpanID:        span.SpanID(s.SpanID()),
		Parent:        span.SpanID(s.ParentSpanID()),
		Name:          s.Name(),
		Start:         s.StartTimestamp().AsTime(),
		End:           s.EndTimestamp().AsTime(),
		StatusMessage: s.Status().Message(),
		Attrs:         attrs(s.Attributes()),
		Resource:      res,
	}
	switch s.Status().Code() {
	case ptrace.StatusCodeOk:
		sp.Status = span.StatusOK
	case ptrace.StatusCodeError:
		sp.Status = span.StatusError
	}
	evs := s.Events()
	for i := range evs.Len() {
		e := evs.At(i)
		sp.Events = append(sp.Events, span.SpanEvent{Name: e.Name(), Time: e.Timestamp().AsTime(), Attrs: attrs(e.Attributes())})
	}
	return sp
}

// attrs converts OTLP attributes to span attributes, with the value types
// span.Attr allows (string, int64, float64, bool, []string).
func attrs(m pcommon.Map) []span.Attr {
	if m.Len() == 0 {
		return nil
	}
	out := make([]span.Attr, 0, m.Len())
	for k, v := range m.All() {
		out = append(out, span.Attr{Key: k, Value: value(v)})
	}
	return out
}

func value(v pcommon.Value) any {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return v.Str()
	case pcommon.ValueTypeInt:
		return v.Int()
	case pcommon.ValueTypeDouble:
		return v.Double()
	case pcommon.ValueTypeBool:
		return v.Bool()
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		out := make([]string, 0, s.Len())
		for i := range s.Len() {
			out = append(out, s.At(i).AsString())
		}
		return out
	}
	return v.AsString()
}

// idFields are the OTLP JSON fields that hold IDs, with their byte lengths.
var idFields = map[string]int{"traceId": 16, "spanId": 8, "parentSpanId": 8}

// hexIDs rewrites base64 trace and span IDs to hex; a document whose IDs
// are all hex already is returned as it is.
func hexIDs(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode OTLP JSON: %w", err)
	}
	if !rewriteIDs(doc) {
		return data, nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("re-encode OTLP JSON: %w", err)
	}
	return out, nil
}

// rewriteIDs walks a JSON value and turns base64 IDs into hex; it reports
// whether it changed anything.
func rewriteIDs(v any) bool {
	changed := false
	switch x := v.(type) {
	case map[string]any:
		for k, f := range x {
			if n, ok := idFields[k]; ok {
				if s, ok := f.(string); ok && s != "" && len(s) != 2*n {
					if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == n {
						x[k] = hex.EncodeToString(b)
						changed = true
					}
				}
				continue
			}
			changed = rewriteIDs(f) || changed
		}
	case []any:
		for _, f := range x {
			changed = rewriteIDs(f) || changed
		}
	}
	return changed
}
