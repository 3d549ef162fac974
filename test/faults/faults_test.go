package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/export/otlp"
	"github.com/podchron/podchron/internal/span"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// rate is the spans a second offered in the timed cases: a busy node's pod
// churn (a few pods a second, about a dozen spans each).
const rate = 50

// outageFor is how long the collector stays down: PODCHRON_FAULT_OUTAGE,
// default 20s.
func outageFor(t *testing.T) time.Duration {
	v := os.Getenv("PODCHRON_FAULT_OUTAGE")
	if v == "" {
		return 20 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("PODCHRON_FAULT_OUTAGE=%q: want a positive duration such as 10m", v)
	}
	return d
}

// TestOutage: spans offered at a steady rate while the collector is down
// for the outage, then back. Memory stays bounded by the queue, every span
// is exported or dropped and counted, none twice, and export resumes
// within a few seconds of the collector's return.
func TestOutage(t *testing.T) {
	outage := outageFor(t)
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			c := newCollector(t, p)
			e := startExporter(t, c, otlp.Config{})
			runtime.GC()
			base := heapInUse()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			offered := make(chan int, 1)
			go func() { offered <- offer(ctx, e, "outage", rate, podSpan) }()

			time.Sleep(time.Second) // steady state, connected
			c.down()
			h := sampleHeap(time.Second)
			time.Sleep(outage)
			queued := e.QueueLen()
			median, peak := h.end()
			c.up()
			back := time.Now()
			time.Sleep(6 * time.Second)
			cancel()
			n := <-offered
			flush(t, e, time.Minute)

			accountFor(t, e, c, n)
			exported, dropped, _ := e.Stats()
			resume := "never"
			first, ok := c.firstOKAfter(back)
			if ok {
				resume = first.Sub(back).Round(10 * time.Millisecond).String()
			}
			d := e.Drops()
			report(t, "outage", outage, "offered", n, "exported", exported, "dropped", dropped,
				"queue_full", d.QueueFull, "export_failed", d.ExportFailed,
				"queued_at_return", queued, "heap_base", mib(base), "heap_median", mib(median), "heap_peak", mib(peak),
				"resume", resume)
			// The queue holds 4096 spans of about 1 KiB (a few KiB
			// in Go memory) plus the batch in flight: well under 32 MiB
			// over the base, however long the outage.
			if peak > base && peak-base > 32<<20 {
				t.Errorf("heap grew %s during the outage (base %s): not bounded by the queue", mib(peak-base), mib(base))
			}
			// An outage shorter than the retry time, whose spans fit in
			// the queue, loses nothing, over either protocol.
			if outage+5*time.Second < otlp.DefaultMaxRetryTime && int(rate*outage.Seconds()) < otlp.DefaultQueueSize/2 && dropped != 0 {
				t.Errorf("dropped %d spans (%+v) in a %s outage that the queue and the retry time cover", dropped, d, outage)
			}
			if !ok || first.Sub(back) > otlp.DefaultMaxBackoff+2*time.Second {
				t.Errorf("export resumed %s after the collector came back, want within %s", resume, otlp.DefaultMaxBackoff+2*time.Second)
			}
		})
	}
}

// TestPartialSuccess: the collector accepts each batch but rejects 1 span
// in 50. The rejected spans are counted, the batch is never resent.
func TestPartialSuccess(t *testing.T) {
	const total = 2000
	bad := func(i int) bool { return i%50 == 7 }
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			c := newCollector(t, p)
			c.script(func() reply { return reply{reject: func(name string) bool { return strings.HasPrefix(name, "bad.") }} })
			e := startExporter(t, c, otlp.Config{})
			wantRejected := 0
			for i := range total {
				s := podSpan("partial", i)
				if bad(i) {
					s.Name = "bad.span"
					wantRejected++
				}
				e.Emit(s)
			}
			start := time.Now()
			flush(t, e, time.Minute)
			took := time.Since(start)
			accountFor(t, e, c, total)
			exported, _, _ := e.Stats()
			_, _, reqs := c.stats()
			d := e.Drops()
			report(t, "offered", total, "exported", exported, "rejected", d.Rejected, "requests", len(reqs), "took", took.Round(time.Millisecond))
			if d.Rejected != uint64(wantRejected) || d.Total() != d.Rejected {
				t.Errorf("drops %+v, want %d rejected only", d, wantRejected)
			}
		})
	}
}

// TestOversizedSpan: one span of 5 MiB among 1000 ordinary ones. It is
// dropped alone (too_large); no request exceeds the collector's default
// 4 MiB limit; everything else arrives.
func TestOversizedSpan(t *testing.T) {
	const total, hugeAt = 1000, 500
	blob := strings.Repeat("x", 5<<20)
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			c := newCollector(t, p)
			e := startExporter(t, c, otlp.Config{})
			for i := range total {
				s := podSpan("oversized", i)
				if i == hugeAt {
					s.Attrs = append(s.Attrs, span.String("podchron.test.blob", blob))
				}
				e.Emit(s)
			}
			flush(t, e, time.Minute)
			accountFor(t, e, c, total)
			exported, _, _ := e.Stats()
			_, _, reqs := c.stats()
			largest := 0
			for _, r := range reqs {
				largest = max(largest, r.bytes)
			}
			d := e.Drops()
			report(t, "offered", total, "exported", exported, "too_large", d.TooLarge, "requests", len(reqs), "largest_request", fmt.Sprintf("%d B", largest))
			if d.TooLarge != 1 || d.Total() != 1 {
				t.Errorf("drops %+v, want the one oversized span", d)
			}
			if largest > 4<<20 {
				t.Errorf("a request of %d bytes: over the collector's default 4 MiB", largest)
			}
		})
	}
}

// TestThrottled: the collector throttles (HTTP 429 with Retry-After: 2,
// gRPC RESOURCE_EXHAUSTED with RetryInfo 2s) for its first 3 s while spans
// arrive at the steady rate. No retry comes sooner than asked, nothing is
// lost, and export resumes within the asked delay of the throttle's end.
func TestThrottled(t *testing.T) {
	const delay, window, run = 2 * time.Second, 3 * time.Second, 5 * time.Second
	throttle, err := status.New(codes.ResourceExhausted, "fault suite: slow down").
		WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range protocols {
		t.Run(p, func(t *testing.T) {
			c := newCollector(t, p)
			until := time.Now().Add(window)
			c.script(func() reply {
				if time.Now().After(until) {
					return reply{}
				}
				return reply{grpcErr: throttle.Err(), httpStatus: http.StatusTooManyRequests, retryAfter: delay}
			})
			e := startExporter(t, c, otlp.Config{})
			ctx, cancel := context.WithTimeout(context.Background(), run)
			defer cancel()
			n := offer(ctx, e, "throttled", rate, podSpan)
			flush(t, e, time.Minute)
			accountFor(t, e, c, n)
			_, _, reqs := c.stats()
			refused, minWait := 0, time.Duration(0)
			for i, r := range reqs {
				if r.ok || i+1 == len(reqs) {
					continue
				}
				refused++
				w := reqs[i+1].at.Sub(r.at)
				if minWait == 0 || w < minWait {
					minWait = w
				}
			}
			first, ok := c.firstOKAfter(until)
			exported, dropped, _ := e.Stats()
			report(t, "offered", n, "exported", exported, "dropped", dropped, "refused_requests", refused,
				"min_wait_after_refusal", minWait.Round(time.Millisecond), "resume_after_throttle", first.Sub(until).Round(time.Millisecond))
			if refused == 0 {
				t.Error("no request was throttled: the case proves nothing")
			}
			if minWait < delay {
				t.Errorf("retried %s after a throttle asking for %s", minWait, delay)
			}
			if dropped != 0 {
				t.Errorf("dropped %d (%+v) under a short throttle", dropped, e.Drops())
			}
			if !ok || first.Sub(until) > delay+time.Second {
				t.Errorf("export resumed %s after the throttle ended", first.Sub(until))
			}
		})
	}
}

// TestNotRetryable: a collector answering 400/401 (InvalidArgument/
// Unauthenticated) to everything. Each span is tried once, dropped and
// counted at once; the export loop is not held.
func TestNotRetryable(t *testing.T) {
	for _, tc := range []struct {
		proto string
		reply reply
	}{
		{"grpc", reply{grpcErr: status.Error(codes.InvalidArgument, "fault suite: bad")}},
		{"grpc", reply{grpcErr: status.Error(codes.Unauthenticated, "fault suite: who")}},
		{"http/protobuf", reply{httpStatus: http.StatusBadRequest}},
		{"http/protobuf", reply{httpStatus: http.StatusUnauthorized}},
	} {
		name := fmt.Sprint(tc.proto, "/", tc.reply.httpStatus)
		if tc.reply.grpcErr != nil {
			name = fmt.Sprint(tc.proto, "/", status.Code(tc.reply.grpcErr))
		}
		t.Run(name, func(t *testing.T) {
			c := newCollector(t, tc.proto)
			c.script(func() reply { return tc.reply })
			e := startExporter(t, c, otlp.Config{})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			n := offer(ctx, e, "refused", rate, podSpan)
			start := time.Now()
			flush(t, e, time.Minute)
			held := time.Since(start)
			accountFor(t, e, c, n)
			_, _, reqs := c.stats()
			sent := 0
			for _, r := range reqs {
				sent += r.spans
			}
			d := e.Drops()
			report(t, "offered", n, "sent", sent, "requests", len(reqs), "export_failed", d.ExportFailed, "flush_took", held.Round(time.Millisecond))
			if sent != n {
				t.Errorf("%d spans sent for %d offered: a refused batch was retried", sent, n)
			}
			if d.ExportFailed != uint64(n) || d.Total() != d.ExportFailed {
				t.Errorf("drops %+v, want %d export_failed", d, n)
			}
			if held > time.Second {
				t.Errorf("the last refused batch held the export loop %s", held)
			}
		})
	}
}
