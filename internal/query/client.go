package query

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/podchron/podchron/internal/span"
)

// Kind names a trace back end's API.
type Kind string

// The back ends a Client reads.
const (
	// Jaeger is Jaeger's public api/v3 (GET /api/v3/traces/{id},
	// GET /api/v3/traces?query.*), answering OTLP JSON.
	Jaeger Kind = "jaeger"
	// Tempo is Grafana Tempo's trace-by-ID API (GET /api/v2/traces/{id})
	// and its TraceQL search (GET /api/search).
	Tempo Kind = "tempo"
)

// ParseKind parses "jaeger" or "tempo".
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case Jaeger, Tempo:
		return k, nil
	}
	return "", fmt.Errorf("unknown trace back end %q (want jaeger or tempo)", s)
}

// DefaultService is the service.name podchron's spans carry.
const DefaultService = "podchron"

// maxBody bounds a response read into memory.
const maxBody = 256 << 20

var (
	// ErrNoTrace means the back end holds no such trace.
	ErrNoTrace = errors.New("trace not found")
	// ErrUnreachable means the back end did not answer at all.
	ErrUnreachable = errors.New("trace back end unreachable")
)

// Client reads traces from one back end.
type Client struct {
	kind Kind
	base string
	hc   *http.Client
}

// New returns a client of the back end at baseURL (e.g.
// http://jaeger-query:16686, http://tempo:3200). hc nil means a client with
// a 30 s timeout.
func New(kind Kind, baseURL string, hc *http.Client) (*Client, error) {
	if _, err := ParseKind(string(kind)); err != nil {
		return nil, err
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("trace back end URL %q: want http(s)://host[:port][/path]", baseURL)
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	return &Client{kind: kind, base: strings.TrimRight(baseURL, "/"), hc: hc}, nil
}

// URL is the back end's base URL.
func (c *Client) URL() string { return c.base }

// Kind is the back end's API.
func (c *Client) Kind() Kind { return c.kind }

// Trace fetches one trace's spans (ErrNoTrace when the back end has none).
func (c *Client) Trace(ctx context.Context, id span.TraceID) ([]span.Span, error) {
	path := "/api/v3/traces/" + id.String()
	if c.kind == Tempo {
		path = "/api/v2/traces/" + id.String()
	}
	body, err := c.get(ctx, path, nil)
	if err != nil {
		return nil, err
	}
	spans, err := c.decode(body)
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return nil, ErrNoTrace
	}
	return spans, nil
}

// decode unwraps a response's OTLP JSON: Jaeger's api/v3 answers
// {"result": TracesData}, Tempo's v2 {"trace": TracesData, "status": ...}.
func (c *Client) decode(body []byte) ([]span.Span, error) {
	var env struct {
		Result json.RawMessage `json:"result"`
		Trace  json.RawMessage `json:"trace"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return nil, fmt.Errorf("%s response: %w", c.kind, err)
	}
	td := env.Result
	if c.kind == Tempo {
		td = env.Trace
	}
	if len(td) == 0 || string(td) == "null" {
		return nil, nil
	}
	return DecodeOTLP(td)
}

// Search selects traces: spans of Service that started between Since and
// Until, in traces one of whose spans carries every attribute of Attrs
// (as a resource or a span attribute).
type Search struct {
	// Service is the service.name (default "podchron").
	Service string
	// Attrs are attribute values every match carries
	// (k8s.pod.name, k8s.namespace.name, k8s.pod.uid).
	Attrs map[string]string
	// Since and Until bound the spans' start (Until zero: now).
	Since, Until time.Time
	// Limit bounds the traces the back end is asked for (default 1000):
	// Jaeger's api/v3 cannot filter by attribute, so its traces are
	// filtered here.
	Limit int
}

// Trace is one trace found by a search.
type Trace struct {
	ID    span.TraceID
	Spans []span.Span
}

// Search returns the traces that match q, in the order the back end gave.
func (c *Client) Search(ctx context.Context, q Search) ([]Trace, error) {
	if q.Service == "" {
		q.Service = DefaultService
	}
	if q.Until.IsZero() {
		q.Until = time.Now()
	}
	if q.Limit <= 0 {
		q.Limit = 1000
	}
	if c.kind == Tempo {
		return c.searchTempo(ctx, q)
	}
	v := url.Values{
		"query.service_name":   {q.Service},
		"query.start_time_min": {q.Since.UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {q.Until.UTC().Format(time.RFC3339Nano)},
		"query.num_traces":     {strconv.Itoa(q.Limit)},
	}
	body, err := c.get(ctx, "/api/v3/traces", v)
	if errors.Is(err, ErrNoTrace) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	spans, err := c.decode(body)
	if err != nil {
		return nil, err
	}
	return matching(group(spans), q.Attrs), nil
}

// searchTempo runs a TraceQL search and fetches each trace found.
func (c *Client) searchTempo(ctx context.Context, q Search) ([]Trace, error) {
	conds := []string{"resource.service.name = " + strconv.Quote(q.Service)}
	for k, val := range q.Attrs {
		conds = append(conds, "."+k+" = "+strconv.Quote(val))
	}
	v := url.Values{
		"q":     {"{ " + strings.Join(conds, " && ") + " }"},
		"start": {strconv.FormatInt(q.Since.Unix(), 10)},
		"end":   {strconv.FormatInt(q.Until.Unix()+1, 10)},
		"limit": {strconv.Itoa(q.Limit)},
	}
	body, err := c.get(ctx, "/api/search", v)
	if err != nil {
		return nil, err
	}
	var resp struct {
		Traces []struct {
			TraceID string `json:"traceID"`
		} `json:"traces"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("tempo search response: %w", err)
	}
	var out []Trace
	for _, t := range resp.Traces {
		id, err := ParseTraceID(t.TraceID)
		if err != nil {
			return nil, fmt.Errorf("tempo search response: %w", err)
		}
		spans, err := c.Trace(ctx, id)
		if errors.Is(err, ErrNoTrace) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Trace{ID: id, Spans: spans})
	}
	return matching(out, q.Attrs), nil
}

// get GETs path?query and returns the body of a 200; 404 is ErrNoTrace,
// no answer ErrUnreachable (naming the URL).
func (c *Client) get(ctx context.Context, path string, query url.Values) ([]byte, error) {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("GET %s: %w", u, ctx.Err())
		}
		return nil, fmt.Errorf("%w: %s (%s): %w", ErrUnreachable, c.base, c.kind, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return body, nil
	case http.StatusNotFound:
		return nil, fmt.Errorf("GET %s: %w", u, ErrNoTrace)
	}
	return nil, fmt.Errorf("GET %s: HTTP %d: %.300s", u, resp.StatusCode, strings.TrimSpace(string(body)))
}

// group splits spans by trace, in the order each trace first appears.
func group(spans []span.Span) []Trace {
	var out []Trace
	at := map[span.TraceID]int{}
	for _, s := range spans {
		i, ok := at[s.TraceID]
		if !ok {
			i = len(out)
			at[s.TraceID] = i
			out = append(out, Trace{ID: s.TraceID})
		}
		out[i].Spans = append(out[i].Spans, s)
	}
	return out
}

// matching keeps the traces one of whose spans carries every attribute of
// want.
func matching(ts []Trace, want map[string]string) []Trace {
	if len(want) == 0 {
		return ts
	}
	var out []Trace
	for _, t := range ts {
		for _, s := range t.Spans {
			if carries(s, want) {
				out = append(out, t)
				break
			}
		}
	}
	return out
}

func carries(s span.Span, want map[string]string) bool {
	for k, v := range want {
		got, ok := lookup(s.Resource, k)
		if !ok {
			got, ok = lookup(s.Attrs, k)
		}
		if !ok || fmt.Sprint(got) != v {
			return false
		}
	}
	return true
}

func lookup(as []span.Attr, k string) (any, bool) {
	for _, a := range as {
		if a.Key == k {
			return a.Value, true
		}
	}
	return nil, false
}

// ParseTraceID parses a 32-digit hex trace ID.
func ParseTraceID(s string) (span.TraceID, error) {
	var t span.TraceID
	if len(s) != 2*len(t) {
		return t, fmt.Errorf("trace ID %q: want %d hex digits", s, 2*len(t))
	}
	if _, err := hex.Decode(t[:], []byte(s)); err != nil {
		return t, fmt.Errorf("trace ID %q: %w", s, err)
	}
	return t, nil
}
