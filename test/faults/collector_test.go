package faults

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// reply is a scripted collector's answer to one request. The zero reply
// accepts every span.
type reply struct {
	grpcErr    error
	httpStatus int           // 0: 200
	retryAfter time.Duration // HTTP Retry-After, whole seconds
	// reject: the spans the collector rejects as a partial success
	// (accepting the rest).
	reject func(name string) bool
}

// collector is a scripted OTLP collector (gRPC or HTTP) on 127.0.0.1 that
// can go down and come back on the same port. It counts every span it
// takes by id (a span taken twice is a duplicate) and the spans it accepts.
type collector struct {
	t     *testing.T
	proto string
	addr  string

	mu       sync.Mutex
	answer   func() reply
	seen     map[[16 + 8]byte]int
	dups     int
	accepted int
	requests []request
	stop     func()
	// keep: the accepted spans are kept (kept), for a case that checks
	// what arrived; off by default (the timed cases' heap figures).
	keep bool
	kept []*tracepb.Span
}

// request is one request as the collector saw it.
type request struct {
	at    time.Time
	spans int
	bytes int
	ok    bool
}

func newCollector(t *testing.T, protocol string) *collector {
	t.Helper()
	c := &collector{t: t, proto: protocol, seen: map[[24]byte]int{}, answer: func() reply { return reply{} }}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.addr = lis.Addr().String()
	c.serve(lis)
	t.Cleanup(c.down)
	return c
}

// script sets how the collector answers from now on.
func (c *collector) script(a func() reply) {
	c.mu.Lock()
	c.answer = a
	c.mu.Unlock()
}

// down stops the collector: connections are closed, new ones refused.
func (c *collector) down() {
	c.mu.Lock()
	stop := c.stop
	c.stop = nil
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// up starts the collector again on its port.
func (c *collector) up() {
	c.t.Helper()
	var lis net.Listener
	var err error
	for range 50 { // the old socket may linger a moment
		if lis, err = net.Listen("tcp", c.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		c.t.Fatalf("collector back on %s: %v", c.addr, err)
	}
	c.serve(lis)
}

func (c *collector) serve(lis net.Listener) {
	var stop func()
	if c.proto == "grpc" {
		srv := grpc.NewServer()
		collectortrace.RegisterTraceServiceServer(srv, grpcService{c: c})
		go func() { _ = srv.Serve(lis) }()
		stop = srv.Stop
	} else {
		srv := &http.Server{Handler: c, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(lis) }()
		stop = func() { _ = srv.Close() }
	}
	c.mu.Lock()
	c.stop = stop
	c.mu.Unlock()
}

// handle records req and returns the reply and how many spans it rejects.
func (c *collector) handle(req *collectortrace.ExportTraceServiceRequest) (reply, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.answer()
	ok := r.grpcErr == nil && (r.httpStatus == 0 || r.httpStatus == http.StatusOK)
	n, rejected := 0, int64(0)
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				n++
				var id [24]byte
				copy(id[:16], sp.GetTraceId())
				copy(id[16:], sp.GetSpanId())
				if !ok {
					continue // refused: a retry of it is no duplicate
				}
				// Taken (accepted or rejected as a partial success):
				// sending it again would be a duplicate.
				c.seen[id]++
				if c.seen[id] > 1 {
					c.dups++
				}
				if r.reject != nil && r.reject(sp.GetName()) {
					rejected++
				} else {
					c.accepted++
					if c.keep {
						c.kept = append(c.kept, sp)
					}
				}
			}
		}
	}
	c.requests = append(c.requests, request{at: time.Now(), spans: n, bytes: proto.Size(req), ok: ok})
	return r, rejected
}

// stats returns the spans accepted, the spans received more than once, and
// a copy of the requests.
func (c *collector) stats() (accepted, dups int, reqs []request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.accepted, c.dups, append([]request(nil), c.requests...)
}

// firstOKAfter is the time of the first accepted request at or after t.
func (c *collector) firstOKAfter(t time.Time) (time.Time, bool) {
	_, _, reqs := c.stats()
	for _, r := range reqs {
		if r.ok && !r.at.Before(t) {
			return r.at, true
		}
	}
	return time.Time{}, false
}

type grpcService struct {
	collectortrace.UnimplementedTraceServiceServer
	c *collector
}

func (g grpcService) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r, rejected := g.c.handle(req)
	if r.grpcErr != nil {
		return nil, r.grpcErr
	}
	return response(rejected), nil
}

func (c *collector) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(req.Body)
	var msg collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(raw, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r, rejected := c.handle(&msg)
	if r.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(r.retryAfter/time.Second)))
	}
	if r.httpStatus != 0 && r.httpStatus != http.StatusOK {
		http.Error(w, "fault suite: refused", r.httpStatus)
		return
	}
	out, err := proto.Marshal(response(rejected))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func response(rejected int64) *collectortrace.ExportTraceServiceResponse {
	out := &collectortrace.ExportTraceServiceResponse{}
	if rejected > 0 {
		out.PartialSuccess = &collectortrace.ExportTracePartialSuccess{RejectedSpans: rejected, ErrorMessage: "fault suite: spans rejected"}
	}
	return out
}
