package otlp

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)

// clearEnv unsets every variable that could leak into a test from the
// machine running it.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		EnvEndpoint, EnvTracesEndpoint, EnvProtocol, EnvTracesProtocol,
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
		"OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_TRACES_INSECURE",
		"OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
		"OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION",
		"OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	} {
		t.Setenv(k, "")
	}
}

func podResource(uid, name, ns string) []span.Attr {
	return []span.Attr{
		span.String("k8s.pod.uid", uid),
		span.String("k8s.pod.name", name),
		span.String("k8s.namespace.name", ns),
		span.String("k8s.node.name", "worker-1"),
	}
}

// podSpans is a small pod lifecycle: one child, one phase, the root last.
func podSpans(uid, name string) []span.Span {
	tid := span.TraceIDForPod(uid)
	root := span.SpanIDFor(tid, "root")
	startup := span.SpanIDFor(tid, "startup")
	cni := span.SpanIDFor(tid, "startup/cni/0")
	res := podResource(uid, name, "default")
	return []span.Span{
		{
			TraceID: tid, SpanID: cni, Parent: startup, Name: "cni.ADD bridge",
			Start: t0.Add(100 * time.Millisecond), End: t0.Add(150*time.Millisecond + 7),
			Status: span.StatusOK,
			Attrs: []span.Attr{
				span.String("podchron.cni.plugin", "bridge"),
				span.String("podchron.cni.command", "ADD"),
				span.Int("process.exit.code", 0),
				span.Int("process.pid", 4242),
				span.Strings("process.command_args", "/opt/cni/bin/bridge", "--debug"),
				span.Float("podchron.test.ratio", 0.25),
				span.Bool("podchron.sigkill", false),
			},
			Resource: res,
		},
		{
			TraceID: tid, SpanID: startup, Parent: root, Name: "pod.startup",
			Start: t0, End: t0.Add(2 * time.Second),
			Status: span.StatusError, StatusMessage: "postStart hook failed",
			Events: []span.SpanEvent{{
				Name: "signal", Time: t0.Add(time.Second),
				Attrs: []span.Attr{
					span.String("podchron.signal", "SIGTERM"),
					span.String("podchron.signal.disposition", "ignored"),
				},
			}},
			Resource: res,
		},
		{
			TraceID: tid, SpanID: root, Name: "pod",
			Start: t0, End: t0.Add(10 * time.Second),
			Status: span.StatusOK, StatusMessage: "not exported for ok",
			Attrs:    []span.Attr{span.String("podchron.exit.cause", "completed")},
			Resource: res,
		},
	}
}

func wantAttrs(as []span.Attr) map[string]any {
	m := map[string]any{}
	for _, a := range as {
		switch v := a.Value.(type) {
		case []string:
			var out []any
			for _, s := range v {
				out = append(out, s)
			}
			m[a.Key] = out
		default:
			m[a.Key] = v
		}
	}
	return m
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// checkExact asserts that every sent span arrived exactly once with its
// ids, name, times, attributes, events, status and per-pod resource.
func checkExact(t *testing.T, sent []span.Span, recv []got, wantRes map[string]any) {
	t.Helper()
	if len(recv) != len(sent) {
		t.Fatalf("received %d spans, sent %d", len(recv), len(sent))
	}
	byID := map[string]got{}
	for _, g := range recv {
		id := hexOf(g.Span.GetSpanId())
		if _, dup := byID[id]; dup {
			t.Fatalf("span %s received twice", id)
		}
		byID[id] = g
	}
	for _, s := range sent {
		g, ok := byID[s.SpanID.String()]
		if !ok {
			t.Fatalf("span %s (%s) not received", s.SpanID, s.Name)
		}
		sp := g.Span
		if got := hexOf(sp.GetTraceId()); got != s.TraceID.String() {
			t.Errorf("%s: trace id %s, want %s", s.Name, got, s.TraceID)
		}
		wantParent := ""
		if !s.Parent.IsZero() {
			wantParent = s.Parent.String()
		}
		if got := hexOf(sp.GetParentSpanId()); got != wantParent {
			t.Errorf("%s: parent %q, want %q", s.Name, got, wantParent)
		}
		if sp.GetName() != s.Name {
			t.Errorf("name %q, want %q", sp.GetName(), s.Name)
		}
		if sp.GetKind() != tracepb.Span_SPAN_KIND_INTERNAL {
			t.Errorf("%s: kind %v", s.Name, sp.GetKind())
		}
		if got, want := sp.GetStartTimeUnixNano(), uint64(s.Start.UnixNano()); got != want {
			t.Errorf("%s: start %d, want %d", s.Name, got, want)
		}
		if got, want := sp.GetEndTimeUnixNano(), uint64(s.End.UnixNano()); got != want {
			t.Errorf("%s: end %d, want %d", s.Name, got, want)
		}
		if got, want := attrMap(sp.GetAttributes()), wantAttrs(s.Attrs); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: attrs\n got %#v\nwant %#v", s.Name, got, want)
		}
		if len(sp.GetEvents()) != len(s.Events) {
			t.Errorf("%s: %d events, want %d", s.Name, len(sp.GetEvents()), len(s.Events))
		} else {
			for i, ev := range s.Events {
				ge := sp.GetEvents()[i]
				if ge.GetName() != ev.Name || ge.GetTimeUnixNano() != uint64(ev.Time.UnixNano()) {
					t.Errorf("%s: event %d = %s@%d, want %s@%d", s.Name, i, ge.GetName(), ge.GetTimeUnixNano(), ev.Name, ev.Time.UnixNano())
				}
				if got, want := attrMap(ge.GetAttributes()), wantAttrs(ev.Attrs); !reflect.DeepEqual(got, want) {
					t.Errorf("%s: event attrs %v, want %v", s.Name, got, want)
				}
			}
		}
		wantCode := map[span.Status]tracepb.Status_StatusCode{
			span.StatusUnset: tracepb.Status_STATUS_CODE_UNSET,
			span.StatusOK:    tracepb.Status_STATUS_CODE_UNSET, // success is left unset (semconv)
			span.StatusError: tracepb.Status_STATUS_CODE_ERROR,
		}[s.Status]
		if sp.GetStatus().GetCode() != wantCode {
			t.Errorf("%s: status %v, want %v", s.Name, sp.GetStatus().GetCode(), wantCode)
		}
		wantMsg := ""
		if s.Status == span.StatusError {
			wantMsg = s.StatusMessage
		}
		if sp.GetStatus().GetMessage() != wantMsg {
			t.Errorf("%s: status message %q, want %q", s.Name, sp.GetStatus().GetMessage(), wantMsg)
		}
		if g.Scope != ScopeName {
			t.Errorf("%s: scope %q", s.Name, g.Scope)
		}
		// The span's own pod resource, on top of the service resource.
		for _, a := range s.Resource {
			if g.Resource[a.Key] != a.Value {
				t.Errorf("%s: resource %s = %v, want %v", s.Name, a.Key, g.Resource[a.Key], a.Value)
			}
		}
		for k, v := range wantRes {
			if g.Resource[k] != v {
				t.Errorf("%s: resource %s = %v, want %v", s.Name, k, g.Resource[k], v)
			}
		}
		// Spans are about the node (k8s.node.name), not the tracer's
		// container: no host.* from inside it.
		for k := range g.Resource {
			if strings.HasPrefix(k, "host.") {
				t.Errorf("%s: resource has %s = %v: the tracer's own host, not the node", s.Name, k, g.Resource[k])
			}
		}
	}
}

func twoPods() []span.Span {
	return append(podSpans("uid-aaaa", "web-0"), podSpans("uid-bbbb", "db-0")...)
}

func TestGRPCExportExact(t *testing.T) {
	clearEnv(t)
	r, addr := startGRPC(t)
	t.Setenv(EnvEndpoint, "http://"+addr)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-podchron-test=grpc-yes")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=test,k8s.cluster.name=kind")
	if !Configured() {
		t.Fatal("Configured() = false with the endpoint set")
	}

	ctx := context.Background()
	e, err := New(ctx, Config{NodeName: "node-from-config", ServiceVersion: "v0.0.1-test"})
	if err != nil {
		t.Fatal(err)
	}
	sent := twoPods()
	for _, s := range sent {
		e.Emit(s)
	}
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	recv := r.sink.waitFor(t, len(sent))
	checkExact(t, sent, recv, map[string]any{
		"service.name":                "podchron",
		"service.version":             "v0.0.1-test",
		"deployment.environment.name": "test",
		"k8s.cluster.name":            "kind",
		// The pod's own node wins over the config's.
		"k8s.node.name": "worker-1",
	})
	// Two pods in one batch: two distinct resources.
	uids := map[any]bool{}
	for _, g := range recv {
		uids[g.Resource["k8s.pod.uid"]] = true
	}
	if len(uids) != 2 {
		t.Errorf("pod uids in resources: %v", uids)
	}
	r.sink.mu.Lock()
	if h := r.sink.headers[0]["x-podchron-test"]; h != "grpc-yes" {
		t.Errorf("header x-podchron-test = %q", h)
	}
	r.sink.mu.Unlock()

	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	exported, dropped, failed := e.Stats()
	if exported != uint64(len(sent)) || dropped != 0 || failed != 0 {
		t.Errorf("stats = %d exported, %d dropped, %d failed", exported, dropped, failed)
	}
}

func TestHTTPExportExact(t *testing.T) {
	clearEnv(t)
	s, srv := startHTTP(t)
	t.Setenv(EnvEndpoint, srv.URL)
	t.Setenv(EnvProtocol, "http/protobuf")
	t.Setenv("OTEL_SERVICE_NAME", "podchron-http")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_HEADERS", "x-podchron-test=http-yes")

	ctx := context.Background()
	e, err := New(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	sent := twoPods()
	for _, sp := range sent {
		e.Emit(sp)
	}
	if err := e.Shutdown(ctx); err != nil { // Shutdown flushes
		t.Fatal(err)
	}
	recv := s.waitFor(t, len(sent))
	checkExact(t, sent, recv, map[string]any{"service.name": "podchron-http"})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.paths[0] != "/v1/traces" {
		t.Errorf("path %q, want /v1/traces", s.paths[0])
	}
	if h := s.headers[0]["X-Podchron-Test"]; h != "http-yes" {
		t.Errorf("header = %q", h)
	}
}

func TestHTTPTracesEndpointUsedAsIs(t *testing.T) {
	clearEnv(t)
	s, srv := startHTTP(t)
	// The generic endpoint points nowhere useful: the per-signal one wins,
	// its path used as is, and the per-signal protocol wins too.
	t.Setenv(EnvEndpoint, "http://127.0.0.1:1")
	t.Setenv(EnvProtocol, "grpc")
	t.Setenv(EnvTracesEndpoint, srv.URL+"/custom/traces")
	t.Setenv(EnvTracesProtocol, "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip")

	ctx := context.Background()
	e, err := New(ctx, Config{})
	if err != nil {
		t.Fatal(err)
	}
	sent := podSpans("uid-cccc", "job-0")
	for _, sp := range sent {
		e.Emit(sp)
	}
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	checkExact(t, sent, s.waitFor(t, len(sent)), map[string]any{"service.name": "podchron"})
	if s.paths[0] != "/custom/traces" {
		t.Errorf("path %q", s.paths[0])
	}
}

func TestProtocolFromEnv(t *testing.T) {
	for _, tc := range []struct {
		generic, traces string
		want            Protocol
		err             bool
	}{
		{"", "", ProtocolGRPC, false},
		{"grpc", "", ProtocolGRPC, false},
		{"http/protobuf", "", ProtocolHTTPProtobuf, false},
		{"HTTP/Protobuf", "", ProtocolHTTPProtobuf, false},
		{"http/json", "", ProtocolHTTPJSON, false},
		{"grpc", "http/protobuf", ProtocolHTTPProtobuf, false},
		{"http/protobuf", "grpc", ProtocolGRPC, false},
		{"thrift", "", "", true},
		{"", "udp", "", true},
	} {
		t.Run(tc.generic+"|"+tc.traces, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(EnvProtocol, tc.generic)
			t.Setenv(EnvTracesProtocol, tc.traces)
			got, err := ProtocolFromEnv()
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("ProtocolFromEnv() = %q, %v; want %q, err %v", got, err, tc.want, tc.err)
			}
		})
	}
	t.Run("New fails on a bad protocol", func(t *testing.T) {
		clearEnv(t)
		t.Setenv(EnvEndpoint, "http://127.0.0.1:4317")
		t.Setenv(EnvProtocol, "carrier-pigeon")
		if _, err := New(context.Background(), Config{}); err == nil {
			t.Fatal("New succeeded")
		}
	})
}

func TestConfigured(t *testing.T) {
	clearEnv(t)
	if Configured() {
		t.Error("Configured() with nothing set")
	}
	t.Setenv(EnvTracesEndpoint, "http://collector:4318/v1/traces")
	if !Configured() {
		t.Error("Configured() = false with the traces endpoint set")
	}
	t.Setenv(EnvTracesEndpoint, "  ")
	if Configured() {
		t.Error("Configured() with a blank endpoint")
	}
	t.Setenv(EnvEndpoint, "http://collector:4317")
	if !Configured() {
		t.Error("Configured() = false with the endpoint set")
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func manySpans(n int) []span.Span {
	base := podSpans("uid-many", "many-0")[0]
	out := make([]span.Span, n)
	for i := range out {
		s := base
		s.SpanID = span.SpanIDFor(s.TraceID, fmt.Sprint("many/", i))
		out[i] = s
	}
	return out
}

// TestCollectorDown: nothing listens. Memory stays bounded by the queue,
// Emit does not block, and every span is accounted for as exported or
// dropped, by reason.
func TestCollectorDown(t *testing.T) {
	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run(proto, func(t *testing.T) {
			clearEnv(t)
			t.Setenv(EnvEndpoint, "http://"+closedAddr(t))
			t.Setenv(EnvProtocol, proto)
			const queue, total = 64, 20000
			e, err := New(context.Background(), Config{
				QueueSize: queue, BatchSize: 16, BatchTimeout: 10 * time.Millisecond,
				MaxRetryTime: 300 * time.Millisecond, InitialBackoff: 10 * time.Millisecond,
				MaxBackoff: 50 * time.Millisecond, Logger: quietLogger(),
			})
			if err != nil {
				t.Fatal(err)
			}
			spans := manySpans(total)
			start := time.Now()
			maxQueue := 0
			for _, s := range spans {
				e.Emit(s)
				maxQueue = max(maxQueue, e.QueueLen())
			}
			// Loose: 20000 non-blocking sends take milliseconds; a
			// blocking Emit would take the retry time per batch.
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Emit of %d spans took %s", total, d)
			}
			if maxQueue > queue {
				t.Errorf("queue grew to %d, bound %d", maxQueue, queue)
			}
			if d := e.Drops(); d.QueueFull == 0 {
				t.Errorf("no queue_full drops: %+v", d)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = e.Shutdown(ctx)
			exported, dropped, failed := e.Stats()
			d := e.Drops()
			if exported != 0 {
				t.Errorf("exported %d to a closed port", exported)
			}
			if l := e.Lags(); len(l) != 0 {
				t.Errorf("delivery lags of spans never delivered: %v", l)
			}
			if exported+dropped != total {
				t.Errorf("exported %d + dropped %d != %d emitted (%+v)", exported, dropped, total, d)
			}
			if d.ExportFailed == 0 || failed == 0 {
				t.Errorf("no export_failed drops / failed batches: %+v, %d", d, failed)
			}
			byReason := d.ByReason()
			if byReason[ReasonQueueFull] != d.QueueFull || byReason[ReasonExportFailed] != d.ExportFailed {
				t.Errorf("ByReason %v vs %+v", byReason, d)
			}
		})
	}
}

// hangingClient never answers until its context ends: a collector that
// accepts connections and stalls.
type hangingClient struct{ calls atomic.Int64 }

func (h *hangingClient) UploadTraces(ctx context.Context, _ []*tracepb.ResourceSpans) error {
	h.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}
func (h *hangingClient) Start(context.Context) error { return nil }
func (h *hangingClient) Stop(context.Context) error  { return nil }

func TestHangingCollectorEmitDoesNotBlockAndShutdownIsBounded(t *testing.T) {
	h := &hangingClient{}
	e, err := New(context.Background(), Config{
		Client: h, QueueSize: 8, BatchSize: 4, BatchTimeout: time.Millisecond,
		Logger: quietLogger(), Resource: nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	const total = 5000
	done := make(chan struct{})
	go func() {
		for _, s := range manySpans(total) {
			e.Emit(s)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Emit blocked behind a hanging export")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := e.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want deadline exceeded", err)
	}
	exported, dropped, _ := e.Stats()
	if exported != 0 || dropped != total {
		t.Errorf("exported %d dropped %d, want 0 and %d (%+v)", exported, dropped, total, e.Drops())
	}
	// After Shutdown, Emit drops and counts.
	e.Emit(manySpans(1)[0])
	if d := e.Drops(); d.Total() != total+1 {
		t.Errorf("drops after a late Emit: %+v", d)
	}
	if err2 := e.Shutdown(context.Background()); err2 == nil {
		t.Error("second Shutdown forgot the first's error")
	}
}

// TestCollectorRecovers: the gRPC collector refuses (Unavailable) for a
// while; the batch in flight is retried and arrives once it is back, with
// nothing lost and nothing logged.
func TestCollectorRecoversGRPC(t *testing.T) {
	clearEnv(t)
	r, addr := startGRPC(t)
	t.Setenv(EnvEndpoint, "http://"+addr)
	r.fail.Store(true)
	var logBuf syncBuffer
	e, err := New(context.Background(), Config{
		BatchTimeout: 5 * time.Millisecond, MaxRetryTime: time.Minute,
		InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logBuf, nil)), LogInterval: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := podSpans("uid-down", "web-1")
	for _, s := range sent {
		e.Emit(s)
	}
	// Wait until it has been refused several times.
	for deadline := time.Now().Add(20 * time.Second); r.calls.Load() < 5; {
		if time.Now().After(deadline) {
			t.Fatal("exporter did not retry")
		}
		time.Sleep(5 * time.Millisecond)
	}
	r.fail.Store(false)
	checkExact(t, sent, r.sink.waitFor(t, len(sent)), nil)

	more := podSpans("uid-after", "web-2")
	for _, s := range more {
		e.Emit(s)
	}
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.sink.waitFor(t, len(sent)+len(more))
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	exported, dropped, failed := e.Stats()
	if exported != uint64(len(sent)+len(more)) || dropped != 0 || failed != 0 {
		t.Errorf("stats %d/%d/%d", exported, dropped, failed)
	}
	// The refusals are retried inside the OTLP client, within the batch's
	// retry time: the batch arrived, so nothing failed for good and
	// nothing is logged (a failure line, rate limited, and its recovery
	// line come when a batch is dropped).
	logs := logBuf.String()
	if n := strings.Count(logs, "span export failed"); n != 0 {
		t.Errorf("%d failure log lines, want none:\n%s", n, logs)
	}
	if n := strings.Count(logs, "span export recovered"); n != 0 {
		t.Errorf("%d recovery log lines:\n%s", n, logs)
	}
}

// TestCollectorComesBackHTTP: the HTTP collector's port is closed, then a
// collector starts on it; spans emitted meanwhile within the retry time
// arrive.
func TestCollectorComesBackHTTP(t *testing.T) {
	clearEnv(t)
	addr := closedAddr(t)
	t.Setenv(EnvEndpoint, "http://"+addr)
	t.Setenv(EnvProtocol, "http/protobuf")
	e, err := New(context.Background(), Config{
		BatchTimeout: 5 * time.Millisecond, MaxRetryTime: time.Minute,
		InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond,
		Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }() // the collector is down: the flush fails
	sent := podSpans("uid-http-down", "web-3")
	for _, s := range sent {
		e.Emit(s)
	}
	time.Sleep(100 * time.Millisecond) // a few refused attempts

	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	s := newSink()
	srv := &httptest.Server{Listener: lis, Config: &http.Server{Handler: httpHandler(s)}}
	srv.Start()
	defer srv.Close()
	checkExact(t, sent, s.waitFor(t, len(sent)), nil)
	if d := e.Drops(); d.Total() != 0 {
		t.Errorf("drops %+v", d)
	}
}

func TestRetryTimeExhausted(t *testing.T) {
	clearEnv(t)
	r, addr := startGRPC(t)
	t.Setenv(EnvEndpoint, "http://"+addr)
	r.fail.Store(true)
	e, err := New(context.Background(), Config{
		BatchTimeout: time.Millisecond, MaxRetryTime: 50 * time.Millisecond,
		InitialBackoff: 5 * time.Millisecond, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	sent := podSpans("uid-x", "x")
	for _, s := range sent {
		e.Emit(s)
	}
	if err := e.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = e.Shutdown(context.Background())
	d := e.Drops()
	if d.ExportFailed != uint64(len(sent)) || d.QueueFull != 0 {
		t.Errorf("drops %+v, want %d export_failed", d, len(sent))
	}
	if _, _, failed := e.Stats(); failed == 0 {
		t.Error("no failed batch counted")
	}
	if r.calls.Load() < 2 {
		t.Errorf("%d attempts: no retry", r.calls.Load())
	}
}

// TestBatchSize: batches never exceed BatchSize.
type recordingClient struct {
	mu      sync.Mutex
	batches []int
}

func (c *recordingClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	n := 0
	for _, r := range rs {
		for _, ss := range r.GetScopeSpans() {
			n += len(ss.GetSpans())
		}
	}
	c.mu.Lock()
	c.batches = append(c.batches, n)
	c.mu.Unlock()
	return nil
}
func (c *recordingClient) Start(context.Context) error { return nil }
func (c *recordingClient) Stop(context.Context) error  { return nil }

func TestBatchSize(t *testing.T) {
	c := &recordingClient{}
	e, err := New(context.Background(), Config{Client: c, BatchSize: 7, QueueSize: 1000, BatchTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range manySpans(100) {
		e.Emit(s)
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, n := range c.batches {
		if n > 7 || n == 0 {
			t.Errorf("batch of %d", n)
		}
		sum += n
	}
	if sum != 100 {
		t.Errorf("exported %d of 100 (%v)", sum, c.batches)
	}
}

// TestAttrValue: the five value types span.Attr holds map one to one; any
// other value is rendered as a string, so that nothing is lost silently.
func TestAttrValue(t *testing.T) {
	str := func(s string) any { return s }
	for _, tc := range []struct {
		in   any
		want any
	}{
		{"s", "s"},
		{int64(-3), int64(-3)},
		{3.5, 3.5},
		{true, true},
		{[]string{"a", "b"}, []any{"a", "b"}},
		{nil, ""},
		{7, str("7")},
		{2 * time.Second, str("2s")},
		{span.StatusError, str("error")},
		{struct{ A int }{1}, str("{1}")},
	} {
		got := recvValue(anyValue(tc.in))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("anyValue(%#v) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A span the collector accepted is timed from its end to its delivery, by
// kind (podchron_span_delivery_lag_seconds). (TestCollectorDown: one never
// delivered is not timed.)
func TestDeliveryLag(t *testing.T) {
	clearEnv(t)
	r, addr := startGRPC(t)
	t.Setenv(EnvEndpoint, "http://"+addr)
	ctx := context.Background()
	e, err := New(ctx, Config{NodeName: "n", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(ctx) }()
	sent := podSpans("uid-lag", "lag-0")[:2] // cni.ADD bridge, pod.startup
	now := time.Now()
	sent[0].Start, sent[0].End = now.Add(-4*time.Second), now.Add(-3*time.Second) // 3 s late
	sent[1].Start, sent[1].End = now.Add(-time.Second), now                       // on time
	for _, s := range sent {
		e.Emit(s)
	}
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	r.sink.waitFor(t, len(sent))
	lags := e.Lags()
	bucket := func(le float64) int { return slices.Index(LagBuckets, le) }
	late, onTime := lags["cni.ADD"], lags["pod.startup"] // a kind: the name up to its first space
	if late.Count != 1 || late.Buckets[bucket(2)] != 0 || late.Buckets[bucket(5)] != 1 || late.Sum < 3 {
		t.Errorf("3 s late span: %+v, want one in (2 s, 5 s]", late)
	}
	if onTime.Count != 1 || onTime.Buckets[bucket(2)] != 1 || onTime.Sum >= 2 {
		t.Errorf("span on time: %+v, want one within 2 s", onTime)
	}
	if len(lags) != 2 {
		t.Errorf("lags for %d names, want 2: %v", len(lags), lags)
	}
}
