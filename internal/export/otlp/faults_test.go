package otlp

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// answer scripts a collector: what it replies to its call-th request (from
// 1). A nil error with status 0/200 accepts the request's spans.
type answer func(call int) reply

type reply struct {
	grpcErr    error
	httpStatus int
	retryAfter string
	rejected   int64 // partial success
}

// script records the time of each request and answers it.
type script struct {
	sink   *sink
	answer answer
	mu     sync.Mutex
	times  []time.Time
	sizes  []int
}

func (s *script) next(req *collectortrace.ExportTraceServiceRequest) reply {
	s.mu.Lock()
	s.times = append(s.times, time.Now())
	s.sizes = append(s.sizes, proto.Size(req))
	call := len(s.times)
	s.mu.Unlock()
	r := s.answer(call)
	if r.grpcErr == nil && (r.httpStatus == 0 || r.httpStatus == http.StatusOK) {
		s.sink.add(req, nil, "")
	}
	return r
}

func (s *script) calls() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

func (r reply) response() *collectortrace.ExportTraceServiceResponse {
	out := &collectortrace.ExportTraceServiceResponse{}
	if r.rejected > 0 {
		out.PartialSuccess = &collectortrace.ExportTracePartialSuccess{RejectedSpans: r.rejected, ErrorMessage: "test: spans rejected"}
	}
	return out
}

type scriptGRPC struct {
	collectortrace.UnimplementedTraceServiceServer
	*script
}

func (g scriptGRPC) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r := g.next(req)
	if r.grpcErr != nil {
		return nil, r.grpcErr
	}
	return r.response(), nil
}

func (s *script) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(req.Body)
	var msg collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r := s.next(&msg)
	if r.retryAfter != "" {
		w.Header().Set("Retry-After", r.retryAfter)
	}
	if r.httpStatus != 0 && r.httpStatus != http.StatusOK {
		http.Error(w, "test: refused", r.httpStatus)
		return
	}
	out, _ := proto.Marshal(r.response())
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// serveGRPC serves s on lis until the returned stop is called (or the
// test ends).
func serveGRPC(t *testing.T, s *script, lis net.Listener) (stop func()) {
	t.Helper()
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, scriptGRPC{script: s})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return srv.Stop
}

// startScript starts a scripted collector for proto and an Exporter
// pointed at it.
func startScript(t *testing.T, protocol string, a answer, cfg Config) (*script, *Exporter) {
	t.Helper()
	clearEnv(t)
	s := &script{sink: newSink(), answer: a}
	switch protocol {
	case "grpc":
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		serveGRPC(t, s, lis)
		t.Setenv(EnvEndpoint, "http://"+lis.Addr().String())
	default:
		srv := httptest.NewServer(s)
		t.Cleanup(srv.Close)
		t.Setenv(EnvEndpoint, srv.URL)
	}
	t.Setenv(EnvProtocol, protocol)
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Shutdown(context.Background()) })
	return s, e
}

func emitFlush(t *testing.T, e *Exporter, spans []span.Span) {
	t.Helper()
	for _, s := range spans {
		e.Emit(s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

var protocols = []string{"grpc", "http/protobuf"}

// TestPartialSuccess: the collector takes a batch of 100 but rejects 1
// span. The batch is not resent: each span reaches the collector once, 99
// count as exported and 1 as dropped (rejected).
func TestPartialSuccess(t *testing.T) {
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			s, e := startScript(t, p, func(int) reply { return reply{rejected: 1} }, Config{BatchTimeout: time.Hour})
			sent := manySpans(100)
			emitFlush(t, e, sent)
			checkExact(t, sent, s.sink.snapshot(), nil)
			if n := len(s.calls()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
			exported, dropped, failed := e.Stats()
			if d := e.Drops(); exported != 99 || dropped != 1 || d.Rejected != 1 || failed != 0 {
				t.Errorf("exported %d, dropped %d (%+v), failed batches %d; want 99, 1 rejected, 0", exported, dropped, d, failed)
			}
		})
	}
}

// TestNotRetryable: statuses the OTLP specification says not to retry are
// tried once, and the batch dropped and counted at once.
func TestNotRetryable(t *testing.T) {
	for _, tc := range []struct {
		proto string
		reply reply
	}{
		{"grpc", reply{grpcErr: status.Error(codes.InvalidArgument, "test: bad")}},
		{"grpc", reply{grpcErr: status.Error(codes.Unauthenticated, "test: who")}},
		{"grpc", reply{grpcErr: status.Error(codes.PermissionDenied, "test: no")}},
		{"grpc", reply{grpcErr: status.Error(codes.ResourceExhausted, "test: full, no RetryInfo")}},
		{"http/protobuf", reply{httpStatus: http.StatusBadRequest}},
		{"http/protobuf", reply{httpStatus: http.StatusUnauthorized}},
		{"http/protobuf", reply{httpStatus: http.StatusForbidden}},
		{"http/protobuf", reply{httpStatus: http.StatusRequestEntityTooLarge}},
	} {
		name := fmt.Sprint(tc.proto, " ", tc.reply.httpStatus, status.Code(tc.reply.grpcErr))
		t.Run(name, func(t *testing.T) {
			s, e := startScript(t, tc.proto, func(int) reply { return tc.reply }, Config{BatchTimeout: time.Hour})
			sent := podSpans("uid-refused", "refused-0")
			start := time.Now()
			emitFlush(t, e, sent)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("a refused batch held the export loop %s", d)
			}
			if n := len(s.calls()); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
			if d := e.Drops(); d.ExportFailed != uint64(len(sent)) || d.Total() != d.ExportFailed {
				t.Errorf("drops %+v, want %d export_failed", d, len(sent))
			}
		})
	}
}

// TestThrottled: a collector that asks to wait (RetryInfo, Retry-After in
// seconds or as a date) is retried no earlier than it asked.
func TestThrottled(t *testing.T) {
	const delay = time.Second
	retryInfo, err := status.New(codes.ResourceExhausted, "test: slow down").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		proto string
		reply reply
	}{
		{"grpc", reply{grpcErr: retryInfo.Err()}},
		{"grpc", reply{grpcErr: status.New(codes.Unavailable, "test: later").Err()}},
		{"http/protobuf", reply{httpStatus: http.StatusTooManyRequests, retryAfter: "1"}},
		{"http/protobuf", reply{httpStatus: http.StatusServiceUnavailable, retryAfter: "1"}},
		// A date is whole seconds: 2 s ahead waits at least 1 s.
		{"http/protobuf", reply{httpStatus: http.StatusServiceUnavailable, retryAfter: "date"}},
	} {
		t.Run(fmt.Sprint(tc.proto, " ", tc.reply.httpStatus, tc.reply.retryAfter, status.Code(tc.reply.grpcErr)), func(t *testing.T) {
			first := tc.reply
			s, e := startScript(t, tc.proto, func(call int) reply {
				if call > 1 {
					return reply{}
				}
				if first.retryAfter == "date" {
					first.retryAfter = time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
				}
				return first
			}, Config{BatchTimeout: time.Hour, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
			sent := podSpans("uid-throttled", "throttled-0")
			emitFlush(t, e, sent)
			calls := s.calls()
			if len(calls) != 2 {
				t.Fatalf("%d attempts, want 2", len(calls))
			}
			wait := calls[1].Sub(calls[0])
			throttled := tc.reply.retryAfter != "" || status.Code(tc.reply.grpcErr) == codes.ResourceExhausted
			if throttled && wait < delay {
				t.Errorf("retried after %s, the collector asked for %s", wait, delay)
			}
			if !throttled && wait >= delay {
				t.Errorf("retried after %s without a throttle (backoff 10ms)", wait)
			}
			checkExact(t, sent, s.sink.snapshot(), nil)
			if exported, dropped, _ := e.Stats(); exported != uint64(len(sent)) || dropped != 0 {
				t.Errorf("exported %d dropped %d", exported, dropped)
			}
		})
	}
}

// TestThrottleBeyondRetryTime: Retry-After longer than the retry time
// left drops the batch at once instead of holding the export loop.
func TestThrottleBeyondRetryTime(t *testing.T) {
	s, e := startScript(t, "http/protobuf", func(int) reply {
		return reply{httpStatus: http.StatusTooManyRequests, retryAfter: "60"}
	}, Config{BatchTimeout: time.Hour, MaxRetryTime: 5 * time.Second})
	start := time.Now()
	emitFlush(t, e, podSpans("uid-60", "sixty-0"))
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("held %s", d)
	}
	if n := len(s.calls()); n != 1 {
		t.Errorf("%d attempts", n)
	}
	if d := e.Drops(); d.ExportFailed != 3 {
		t.Errorf("drops %+v", d)
	}
}

// TestBatchBytes: batches are cut before they exceed the byte budget, and
// a span over the budget on its own is dropped alone: the rest of its
// batch arrives.
func TestBatchBytes(t *testing.T) {
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			const budget = 64 << 10
			s, e := startScript(t, p, func(int) reply { return reply{} }, Config{BatchTimeout: time.Hour, MaxBatchBytes: budget})
			sent := manySpans(40)
			for i := range sent {
				sent[i].Attrs = []span.Attr{span.String("podchron.test.blob", strings.Repeat("x", 10<<10))}
			}
			huge := sent[7]
			huge.SpanID = span.SpanIDFor(huge.TraceID, "huge")
			huge.Attrs = []span.Attr{span.String("podchron.test.blob", strings.Repeat("y", budget))}
			emitFlush(t, e, append(sent[:7:7], append([]span.Span{huge}, sent[7:]...)...))
			checkExact(t, sent, s.sink.snapshot(), nil)
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.sizes) < 7 {
				t.Errorf("%d requests for 400 KiB of spans under a 64 KiB budget", len(s.sizes))
			}
			for _, n := range s.sizes {
				if n > budget {
					t.Errorf("request of %d bytes, budget %d", n, budget)
				}
			}
			if d := e.Drops(); d.TooLarge != 1 || d.Total() != 1 {
				t.Errorf("drops %+v, want 1 too_large", d)
			}
		})
	}
}

// TestGRPCResumesAfterRestart: the collector is down for 6 s, then back on
// the same port; the batch waiting meanwhile arrives within about
// MaxBackoff (1 s here) of its return, not after gRPC's own connection
// backoff (which had reached about 4 s, and grows to 120 s).
func TestGRPCResumesAfterRestart(t *testing.T) {
	clearEnv(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	s := &script{sink: newSink(), answer: func(int) reply { return reply{} }}
	stop := serveGRPC(t, s, lis)
	t.Setenv(EnvEndpoint, "http://"+addr)
	e, err := New(context.Background(), Config{
		BatchTimeout: time.Millisecond, MaxBackoff: time.Second, Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()
	emitFlush(t, e, podSpans("uid-before", "before-0")) // connected
	stop()

	sent := podSpans("uid-outage", "outage-0")
	for _, sp := range sent {
		e.Emit(sp)
	}
	time.Sleep(6 * time.Second)
	lis, err = net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s taken meanwhile: %v", addr, err)
	}
	back := time.Now()
	serveGRPC(t, s, lis)
	s.sink.waitFor(t, 3+len(sent))
	if d := time.Since(back); d > 2500*time.Millisecond {
		t.Errorf("export resumed %s after the collector came back", d)
	}
	if d := e.Drops(); d.Total() != 0 {
		t.Errorf("drops %+v", d)
	}
}
