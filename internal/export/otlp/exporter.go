// Package otlp exports podchron spans over OTLP (gRPC or HTTP) with the
// OpenTelemetry Go SDK exporters, keeping podchron's own deterministic trace
// and span ids and its timestamps.
//
// podchron does not create spans through an SDK tracer: the correlator emits
// finished spans with ids derived from the pod UID, so Exporter converts each
// one into OTLP protobuf itself and sends batches, cut by count and by bytes,
// with the OTLP exporters' low-level clients (otlptrace.Client). Every
// exported span's resource is the service resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, node) merged with the span's own pod resource, so
// one batch can hold several pods' resources.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podchron/podchron/internal/span"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
)

// Defaults for Config's zero fields.
const (
	DefaultQueueSize = 4096
	DefaultBatchSize = 512
	// DefaultMaxBatchBytes leaves a quarter of the collector's default
	// 4 MiB gRPC receive limit for what the estimate does not count.
	DefaultMaxBatchBytes = 3 << 20
	// DefaultBatchTimeout: a batch's timer starts at its first span, so
	// every span that does not fill a batch waits exactly this long before
	// it leaves. Measured in the e2e under load (test/e2e/latency_test.go,
	// 2026-11-24, phase end -> readable from Jaeger): at 1s pod.termination
	// took 1.1–2.3 s, over the 2 s target; at 100ms 0.87–1.11 s. The price
	// is at most 10 export calls a second while spans trickle in; bursts
	// fill whole batches (DefaultBatchSize) as before.
	DefaultBatchTimeout   = 100 * time.Millisecond
	DefaultMaxRetryTime   = 30 * time.Second
	DefaultInitialBackoff = 500 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Second
	DefaultLogInterval    = time.Minute
	DefaultServiceName    = "podchron"
)

// Drop reasons, as used by Drops.ByReason.
const (
	ReasonQueueFull    = "queue_full"
	ReasonExportFailed = "export_failed"
	ReasonShutdown     = "shutdown"
	ReasonRejected     = "rejected"
	ReasonTooLarge     = "too_large"
)

// Exporter is a span.Sink that batches spans and exports them over
// OTLP. Emit never blocks. A single goroutine, started by New and stopped by
// Shutdown, owns batching and export.
type Exporter struct {
	cfg    Config
	client otlptrace.Client
	scope  *commonpb.InstrumentationScope
	log    *slog.Logger

	// mu guards closed against Emit racing Shutdown: Emit sends under the
	// read lock, so once Shutdown holds the write lock and sets closed, no
	// span can enter the queue behind the final drain.
	mu     sync.RWMutex
	closed bool

	queue   chan span.Span
	flushCh chan chan struct{}
	stop    chan struct{}
	done    chan struct{}
	// ctx is cancelled when Shutdown's context ends: it aborts in-flight
	// exports and retries.
	ctx    context.Context
	cancel context.CancelFunc

	shutdownOnce sync.Once
	shutdownErr  error

	exported      atomic.Uint64
	failedBatches atomic.Uint64
	dropQueueFull atomic.Uint64
	dropFailed    atomic.Uint64
	dropShutdown  atomic.Uint64
	dropRejected  atomic.Uint64
	dropTooLarge  atomic.Uint64
	lags          lags
	// traceDrops: the drops each trace's root will tell.
	traceDrops traceDrops

	// Owned by the export goroutine.
	lastLog       time.Time
	suppressed    int
	failing       bool
	loggedFailure bool
	giveUp        bool
	res           *resources
}

// New starts an Exporter. With cfg.Client nil it builds the OTLP client from
// the environment (see NewClientFromEnv); ctx bounds only that setup.
func New(ctx context.Context, cfg Config) (*Exporter, error) {
	cfg.setDefaults()
	client := cfg.Client
	if client == nil {
		c, _, err := NewClientFromEnv(cfg)
		if err != nil {
			return nil, err
		}
		client = c
	}
	if err := client.Start(ctx); err != nil {
		return nil, fmt.Errorf("otlp client: %w", err)
	}
	base := cfg.Resource
	if base == nil {
		var err error
		base, err = ServiceResource(ctx, cfg.ServiceVersion, cfg.NodeName)
		if err != nil {
			// A partial resource is still usable; say so once.
			cfg.Logger.Warn("otlp: service resource incomplete", "err", err)
		}
	}
	e := &Exporter{
		cfg:     cfg,
		client:  client,
		scope:   &commonpb.InstrumentationScope{Name: ScopeName, Version: cfg.ServiceVersion},
		res:     newResources(base, cfg.QueueSize),
		log:     cfg.Logger,
		queue:   make(chan span.Span, cfg.QueueSize),
		flushCh: make(chan chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.run()
	return e, nil
}

// Emit queues s for export. It never blocks: when the queue is full, or
// after Shutdown, the span is dropped and counted. The queue keeps s's
// slices (Attrs, Events, Resource): the caller must not modify them after
// Emit.
func (e *Exporter) Emit(s span.Span) {
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		e.dropShutdown.Add(1)
		return
	}
	select {
	case e.queue <- s:
	default:
		e.dropQueueFull.Add(1)
		e.traceDrops.add(s.TraceID, s.Parent.IsZero(), ReasonQueueFull, time.Now())
	}
	e.mu.RUnlock()
}

// Stats returns the spans exported, the spans dropped (all reasons) and the
// batches that failed for good.
func (e *Exporter) Stats() (exported, dropped, failedBatches uint64) {
	return e.exported.Load(), e.Drops().Total(), e.failedBatches.Load()
}

// Drops returns the dropped spans by reason.
func (e *Exporter) Drops() Drops {
	return Drops{
		QueueFull:    e.dropQueueFull.Load(),
		ExportFailed: e.dropFailed.Load(),
		Shutdown:     e.dropShutdown.Load(),
		Rejected:     e.dropRejected.Load(),
		TooLarge:     e.dropTooLarge.Load(),
	}
}

// QueueLen is the number of spans waiting in the queue (not counting the
// batch being exported).
func (e *Exporter) QueueLen() int { return len(e.queue) }

// Flush exports everything queued when it is called (retrying as usual) and
// returns when that is done, or when ctx ends. After Shutdown it returns at
// once.
func (e *Exporter) Flush(ctx context.Context) error {
	reply := make(chan struct{})
	select {
	case e.flushCh <- reply:
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-e.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown stops accepting spans, exports what is queued within ctx, stops
// the export goroutine and shuts the OTLP client down. What cannot be sent
// before ctx ends is dropped and counted. Calls after the first return the
// first call's result.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.shutdownOnce.Do(func() {
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()

		stopAbort := context.AfterFunc(ctx, e.cancel)
		defer stopAbort()
		close(e.stop)
		var err error
		select {
		case <-e.done:
		case <-ctx.Done():
			// e.cancel has run: the loop is abandoning its batch; wait
			// for it so nothing touches the client after Shutdown.
			<-e.done
			err = ctx.Err()
		}
		cerr := e.client.Stop(ctx)
		e.cancel()
		e.shutdownErr = errors.Join(err, cerr)
	})
	return e.shutdownErr
}

// String describes the exporter for logs.
func (e *Exporter) String() string {
	return fmt.Sprintf("otlp(queue=%d batch=%d timeout=%s)", e.cfg.QueueSize, e.cfg.BatchSize, e.cfg.BatchTimeout)
}

var _ span.Sink = (*Exporter)(nil)
