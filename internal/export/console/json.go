// JSON output: one object per span, as the correlator emitted it.

package console

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/podchron/podchron/internal/redact"
	"github.com/podchron/podchron/internal/span"
)

type jsonSpan struct {
	TraceID       string         `json:"trace_id"`
	SpanID        string         `json:"span_id"`
	ParentID      string         `json:"parent_id"`
	Name          string         `json:"name"`
	Start         string         `json:"start"`
	End           string         `json:"end"`
	DurationMS    float64        `json:"duration_ms"`
	Status        string         `json:"status"`
	StatusMessage string         `json:"status_message,omitempty"`
	Attrs         map[string]any `json:"attrs"`
	Events        []jsonEvent    `json:"events"`
	Resource      map[string]any `json:"resource"`
}

type jsonEvent struct {
	Name  string         `json:"name"`
	Time  string         `json:"time"`
	Attrs map[string]any `json:"attrs"`
}

func (p *Printer) writeJSON(s *span.Span) {
	js := jsonSpan{
		TraceID:       s.TraceID.String(),
		SpanID:        s.SpanID.String(),
		Name:          s.Name,
		Start:         fmtTime(s.Start),
		End:           fmtTime(s.End),
		DurationMS:    float64(s.Duration()) / float64(time.Millisecond),
		Status:        s.Status.String(),
		StatusMessage: s.StatusMessage,
		Attrs:         jsonAttrs(s.Attrs),
		Events:        make([]jsonEvent, 0, len(s.Events)),
		Resource:      jsonAttrs(s.Resource),
	}
	if !s.Parent.IsZero() {
		js.ParentID = s.Parent.String()
	}
	for _, ev := range s.Events {
		js.Events = append(js.Events, jsonEvent{Name: ev.Name, Time: fmtTime(ev.Time), Attrs: jsonAttrs(ev.Attrs)})
	}
	p.jbuf.Reset()
	if err := p.enc.Encode(js); err != nil {
		// Cannot happen with the normalized values; keep the line count.
		p.stats.WriteErrors++
		return
	}
	// encoding/json leaves DEL and the C1 controls raw.
	p.buf.Write(redact.JSONControls(p.jbuf.Bytes()))
}

// fmtTime renders a JSON timestamp: RFC 3339, UTC, fixed nanosecond width
// (so that the strings sort as the times do).
func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z07:00") }

func jsonAttrs(as []span.Attr) map[string]any {
	m := make(map[string]any, len(as))
	for _, a := range as {
		m[a.Key] = jsonValue(a.Value)
	}
	return m
}

// jsonValue keeps the documented attribute types (string, int64, float64,
// bool, []string) and turns anything else into something encoding/json
// always accepts.
func jsonValue(v any) any {
	switch x := v.(type) {
	case nil, string, bool, int64, int, int32, uint32, uint64:
		return x
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return x
	case []string:
		if x == nil {
			return []string{}
		}
		return x
	case time.Time:
		return fmtTime(x)
	case time.Duration:
		return x.String()
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}
