package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/podchron/podchron/internal/span"
)

// ParseJSON turns one line of the JSON output (FormatJSON) back into the
// span the model emitted (attribute values: string, int64, float64, bool,
// []string; attributes sorted by key, since JSON objects have no order).
func ParseJSON(line []byte) (span.Span, error) {
	var js jsonSpan
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&js); err != nil {
		return span.Span{}, err
	}
	var s span.Span
	var err error
	if err = hexID(s.TraceID[:], js.TraceID); err != nil {
		return s, fmt.Errorf("trace_id: %w", err)
	}
	if err = hexID(s.SpanID[:], js.SpanID); err != nil {
		return s, fmt.Errorf("span_id: %w", err)
	}
	if js.ParentID != "" {
		if err = hexID(s.Parent[:], js.ParentID); err != nil {
			return s, fmt.Errorf("parent_id: %w", err)
		}
	}
	s.Name, s.StatusMessage = js.Name, js.StatusMessage
	if s.Start, err = time.Parse(time.RFC3339Nano, js.Start); err != nil {
		return s, err
	}
	if s.End, err = time.Parse(time.RFC3339Nano, js.End); err != nil {
		return s, err
	}
	switch js.Status {
	case "ok":
		s.Status = span.StatusOK
	case "error":
		s.Status = span.StatusError
	}
	s.Attrs, s.Resource = attrs(js.Attrs), attrs(js.Resource)
	for _, ev := range js.Events {
		t, err := time.Parse(time.RFC3339Nano, ev.Time)
		if err != nil {
			return s, err
		}
		s.Events = append(s.Events, span.SpanEvent{Name: ev.Name, Time: t, Attrs: attrs(ev.Attrs)})
	}
	return s, nil
}

func hexID(dst []byte, s string) error {
	b, err := hex.DecodeString(s)
	if err != nil {
		return err
	}
	if len(b) != len(dst) {
		return fmt.Errorf("%q: want %d bytes", s, len(dst))
	}
	copy(dst, b)
	return nil
}

func attrs(m map[string]any) []span.Attr {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]span.Attr, 0, len(keys))
	for _, k := range keys {
		out = append(out, span.Attr{Key: k, Value: attrValue(m[k])})
	}
	return out
}

func attrValue(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case []any:
		ss := make([]string, 0, len(x))
		for _, e := range x {
			ss = append(ss, fmt.Sprint(e))
		}
		return ss
	}
	return v
}
