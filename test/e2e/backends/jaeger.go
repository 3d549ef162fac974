// Package backends runs the real observability back ends the e2e checks
// podchron against — Jaeger v2 (in-memory storage, OTLP in, query API out)
// and Prometheus (Debian) with podchron's alert rules — on loopback, and
// reads back what they hold.
package backends

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/query"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/test/e2e/proc"
)

// waitHTTP polls url until it answers 200.
func waitHTTP(ctx context.Context, p *proc.Process, url string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := getJSON(ctx, url, nil)
		if err == nil {
			return nil
		}
		if done, perr := p.Exited(); done {
			return fmt.Errorf("%s exited (%w):\n%s", p.Name, perr, p.LogTail(3000))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready at %s after %s: %w\n%s", p.Name, url, timeout, err, p.LogTail(3000))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func getJSON(ctx context.Context, u string, into any) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &httpError{URL: u, Status: resp.StatusCode, Body: strings.TrimSpace(string(body))}
	}
	if into == nil {
		return nil
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

type httpError struct {
	URL    string
	Status int
	Body   string
}

func (e *httpError) Error() string {
	return fmt.Sprintf("GET %s: HTTP %d: %.300s", e.URL, e.Status, e.Body)
}

// Jaeger is a running Jaeger v2 all-in-one.
type Jaeger struct {
	p      *proc.Process
	client *query.Client
	// OTLPGRPC is the OTLP/gRPC receiver's host:port; Query the query
	// API's base URL.
	OTLPGRPC, Query string
}

// JaegerPorts are the loopback ports Jaeger binds.
type JaegerPorts struct {
	OTLPGRPC, OTLPHTTP, QueryHTTP, QueryGRPC, Health, Metrics int
}

// DefaultJaegerPorts are Jaeger's usual ports (on 127.0.0.1 only).
var DefaultJaegerPorts = JaegerPorts{OTLPGRPC: 4317, OTLPHTTP: 4318, QueryHTTP: 16686, QueryGRPC: 16685, Health: 13133, Metrics: 18888}

// StartJaeger starts bin (the v2 `jaeger` binary) with in-memory storage.
func StartJaeger(ctx context.Context, log *slog.Logger, bin, dir string, ports JaegerPorts) (*Jaeger, error) {
	cfg := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    logs:
      level: info
    metrics:
      level: basic
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: %[6]d
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: 127.0.0.1:%[5]d
  jaeger_query:
    enable_tracing: false
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%[3]d
    grpc:
      endpoint: 127.0.0.1:%[4]d
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:%[1]d
      http:
        endpoint: 127.0.0.1:%[2]d
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, ports.OTLPGRPC, ports.OTLPHTTP, ports.QueryHTTP, ports.QueryGRPC, ports.Health, ports.Metrics)
	path := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, fmt.Errorf("jaeger config: %w", err)
	}
	p, err := proc.Start(log, "jaeger", filepath.Join(dir, "jaeger.log"), bin, "--config", path)
	if err != nil {
		return nil, err
	}
	j := &Jaeger{p: p, OTLPGRPC: fmt.Sprintf("127.0.0.1:%d", ports.OTLPGRPC),
		Query: fmt.Sprintf("http://127.0.0.1:%d", ports.QueryHTTP)}
	if j.client, err = query.New(query.Jaeger, j.Query, nil); err != nil {
		_ = p.Stop(stopGrace)
		return nil, err
	}
	if err := waitHTTP(ctx, p, j.Query+"/api/v3/services", 60*time.Second); err != nil {
		_ = p.Stop(stopGrace)
		return nil, err
	}
	return j, nil
}

// Close stops Jaeger.
func (j *Jaeger) Close() error { return j.p.Stop(stopGrace) }

// stopGrace bounds a back end's SIGTERM shutdown.
const stopGrace = 15 * time.Second

// Log returns the tail of Jaeger's log.
func (j *Jaeger) Log(n int) string { return j.p.LogTail(n) }

// Search returns the IDs of a service's traces (spans started in the last
// hour) one of whose spans carries every tag given, as a resource or a span
// attribute. Jaeger's api/v3 search takes no attributes: the traces are
// filtered here (internal/query).
func (j *Jaeger) Search(ctx context.Context, service string, tags map[string]string) ([]string, error) {
	found, err := j.client.Search(ctx, query.Search{Service: service, Attrs: tags, Since: time.Now().Add(-time.Hour)})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(found))
	for _, t := range found {
		ids = append(ids, t.ID.String())
	}
	return ids, nil
}

// Trace is a trace as Jaeger's query API returns it, flattened.
type Trace struct {
	TraceID string
	Spans   []*Span
}

// Span is one span of a Trace.
type Span struct {
	SpanID, ParentID string
	Name             string
	Start            time.Time
	Duration         time.Duration
	Tags             map[string]any
	Events           []SpanEvent
	Service          string
	Resource         map[string]any
	// Error: otel.status_code=ERROR (or error=true).
	Error bool
}

// SpanEvent is a span event (a Jaeger "log").
type SpanEvent struct {
	Time   time.Time
	Name   string
	Fields map[string]any
}

// End is Start+Duration.
func (s *Span) End() time.Time { return s.Start.Add(s.Duration) }

// Str returns a tag as a string ("" when absent).
func (s *Span) Str(key string) string {
	v, ok := s.Tags[key]
	if !ok {
		return ""
	}
	return fmt.Sprint(v)
}

// ErrNoTrace means Jaeger does not (yet) have the trace.
var ErrNoTrace = query.ErrNoTrace

// Trace fetches one trace by ID through Jaeger's public api/v3
// (GET /api/v3/traces/<id>, OTLP JSON decoded by internal/query, the
// decoder kubectl-podchron uses). Attribute values keep their OTLP types:
// ints are int64, doubles float64, string arrays []string.
func (j *Jaeger) Trace(ctx context.Context, traceID string) (*Trace, error) {
	id, err := query.ParseTraceID(traceID)
	if err != nil {
		return nil, err
	}
	spans, err := j.client.Trace(ctx, id)
	if err != nil {
		return nil, err
	}
	t := &Trace{TraceID: id.String()}
	for _, s := range spans {
		t.Spans = append(t.Spans, fromSpan(s))
	}
	sort.SliceStable(t.Spans, func(a, b int) bool { return t.Spans[a].Start.Before(t.Spans[b].Start) })
	return t, nil
}

// fromSpan flattens a span as the e2e reads it: Tags are the span's
// attributes plus, as Jaeger's own model has them, otel.status_code and
// otel.status_description for a status set and error=true for an error;
// an event's Fields carry its name under "event".
func fromSpan(s span.Span) *Span {
	sp := &Span{SpanID: s.SpanID.String(), Name: s.Name, Start: s.Start, Duration: s.Duration(),
		Tags: attrMap(s.Attrs), Resource: attrMap(s.Resource)}
	if !s.Parent.IsZero() {
		sp.ParentID = s.Parent.String()
	}
	switch s.Status {
	case span.StatusError:
		sp.Tags["otel.status_code"] = "ERROR"
		sp.Tags["error"] = true
		sp.Error = true
	case span.StatusOK:
		sp.Tags["otel.status_code"] = "OK"
	}
	if s.StatusMessage != "" {
		sp.Tags["otel.status_description"] = s.StatusMessage
	}
	for _, e := range s.Events {
		f := attrMap(e.Attrs)
		f["event"] = e.Name
		sp.Events = append(sp.Events, SpanEvent{Time: e.Time, Name: e.Name, Fields: f})
	}
	if svc, ok := sp.Resource["service.name"].(string); ok {
		sp.Service = svc
	}
	return sp
}

func attrMap(as []span.Attr) map[string]any {
	m := make(map[string]any, len(as))
	for _, a := range as {
		m[a.Key] = a.Value
	}
	return m
}

// Services lists the services Jaeger knows.
func (j *Jaeger) Services(ctx context.Context) ([]string, error) {
	var resp struct {
		Services []string `json:"services"`
	}
	err := getJSON(ctx, j.Query+"/api/v3/services", &resp)
	return resp.Services, err
}

// Named returns the spans called name.
func (t *Trace) Named(name string) []*Span {
	var out []*Span
	for _, s := range t.Spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// Find returns the spans for which match is true.
func (t *Trace) Find(match func(*Span) bool) []*Span {
	var out []*Span
	for _, s := range t.Spans {
		if match(s) {
			out = append(out, s)
		}
	}
	return out
}

// ByID returns the span with this ID.
func (t *Trace) ByID(id string) *Span {
	for _, s := range t.Spans {
		if s.SpanID == id {
			return s
		}
	}
	return nil
}

// Children returns the direct children of s.
func (t *Trace) Children(s *Span) []*Span {
	return t.Find(func(c *Span) bool { return c.ParentID == s.SpanID })
}

// String renders the trace as an indented tree with offsets and durations
// (for test failure output).
func (t *Trace) String() string {
	if t == nil || len(t.Spans) == 0 {
		return "(empty trace)"
	}
	t0 := t.Spans[0].Start
	var b strings.Builder
	fmt.Fprintf(&b, "trace %s, %d spans\n", t.TraceID, len(t.Spans))
	var walk func(parent string, depth int)
	seen := map[string]bool{}
	walk = func(parent string, depth int) {
		for _, s := range t.Spans {
			if s.ParentID != parent || seen[s.SpanID] {
				continue
			}
			seen[s.SpanID] = true
			status := "ok "
			if s.Error {
				status = "ERR"
			}
			fmt.Fprintf(&b, "  %+9.3fs %10s %s %s%s %s\n", s.Start.Sub(t0).Seconds(), s.Duration.Round(100*time.Microsecond),
				status, strings.Repeat("  ", depth), s.Name, tagSummary(s))
			for _, e := range s.Events {
				fmt.Fprintf(&b, "  %+9.3fs %10s     %s  • %s %s\n", e.Time.Sub(t0).Seconds(), "", strings.Repeat("  ", depth), e.Name, fieldSummary(e.Fields))
			}
			walk(s.SpanID, depth+1)
		}
	}
	// Roots: no parent, or a parent not (yet) in Jaeger (the pod span is
	// exported when the pod is gone).
	ids := map[string]bool{}
	for _, s := range t.Spans {
		ids[s.SpanID] = true
	}
	parents := []string{""}
	for _, s := range t.Spans {
		if s.ParentID != "" && !ids[s.ParentID] && !slices.Contains(parents, s.ParentID) {
			parents = append(parents, s.ParentID)
		}
	}
	for i, p := range parents {
		if i > 0 {
			fmt.Fprintf(&b, "  (parent %s not in Jaeger yet)\n", p)
		}
		walk(p, 0)
	}
	return b.String()
}

func tagSummary(s *Span) string {
	var parts []string
	for k, v := range s.Tags {
		if strings.HasPrefix(k, "podchron.") || strings.HasPrefix(k, "process.") || k == names.K8sContainerName || k == "otel.status_description" {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func fieldSummary(f map[string]any) string {
	var parts []string
	for k, v := range f {
		if k != "event" {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
