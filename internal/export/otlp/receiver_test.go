package otlp

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// got is one span as a collector received it, with its resource and scope.
type got struct {
	Span     *tracepb.Span
	Resource map[string]any
	Scope    string
}

// sink collects what an in-process OTLP receiver gets.
type sink struct {
	mu       sync.Mutex
	spans    []got
	requests int
	headers  []map[string]string // one per request, lower-case keys
	paths    []string
	notify   chan struct{}
}

func newSink() *sink { return &sink{notify: make(chan struct{}, 1)} }

func (s *sink) add(req *collectortrace.ExportTraceServiceRequest, hdr map[string]string, path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	s.headers = append(s.headers, hdr)
	s.paths = append(s.paths, path)
	for _, rs := range req.GetResourceSpans() {
		res := attrMap(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				s.spans = append(s.spans, got{Span: sp, Resource: res, Scope: ss.GetScope().GetName()})
			}
		}
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

func (s *sink) snapshot() []got {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]got(nil), s.spans...)
}

func (s *sink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.spans)
}

// waitFor waits until n spans have arrived (generous bound: it only fails
// a broken test, it does not measure anything).
func (s *sink) waitFor(t *testing.T, n int) []got {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for s.count() < n {
		select {
		case <-s.notify:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("received %d spans, want %d", s.count(), n)
		}
	}
	return s.snapshot()
}

// grpcReceiver is a minimal OTLP/gRPC trace collector.
type grpcReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	sink *sink
	// fail makes Export answer Unavailable (a collector that is up but
	// refusing, e.g. overloaded).
	fail  atomic.Bool
	calls atomic.Int64
}

func (r *grpcReceiver) Export(ctx context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.calls.Add(1)
	if r.fail.Load() {
		return nil, status.Error(codes.Unavailable, "test collector down")
	}
	hdr := map[string]string{}
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		for k, v := range md {
			if len(v) > 0 {
				hdr[k] = v[0]
			}
		}
	}
	r.sink.add(req, hdr, "")
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// startGRPC serves a receiver on a loopback port; it stops with the test.
func startGRPC(t *testing.T) (*grpcReceiver, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &grpcReceiver{sink: newSink()}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, r)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return r, lis.Addr().String()
}

// httpHandler is a minimal OTLP/HTTP (protobuf) trace collector.
func httpHandler(s *sink) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodPost {
			http.Error(w, "method", http.StatusMethodNotAllowed)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
			http.Error(w, "content type "+ct, http.StatusUnsupportedMediaType)
			return
		}
		var msg collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(raw, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		hdr := map[string]string{}
		for k, v := range req.Header {
			if len(v) > 0 {
				hdr[http.CanonicalHeaderKey(k)] = v[0]
			}
		}
		s.add(&msg, hdr, req.URL.Path)
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = io.Copy(w, bytes.NewReader(out))
	}
}

func startHTTP(t *testing.T) (*sink, *httptest.Server) {
	t.Helper()
	s := newSink()
	srv := httptest.NewServer(httpHandler(s))
	t.Cleanup(srv.Close)
	return s, srv
}

// attrMap flattens OTLP attributes into Go values: string, int64, float64,
// bool, []any.
func attrMap(kvs []*commonpb.KeyValue) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = recvValue(kv.GetValue())
	}
	return m
}

func recvValue(v *commonpb.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return x.IntValue
	case *commonpb.AnyValue_DoubleValue:
		return x.DoubleValue
	case *commonpb.AnyValue_BoolValue:
		return x.BoolValue
	case *commonpb.AnyValue_ArrayValue:
		var out []any
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, recvValue(e))
		}
		return out
	}
	return nil
}
