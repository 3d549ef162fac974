// Package otlp exports podchron spans over OTLP (gRPC or HTTP) with the
// OpenTelemetry Go SDK exporters, keeping podchron's own deterministic trace
// and span ids and its timestamps.
//
// podchron does not create spans through an SDK tracer: the correlator emits
// finished spans with ids derived from the pod UID, so Exporter converts each
// one into an sdktrace.ReadOnlySpan and calls the SDK exporter's ExportSpans
// from its own batching loop. Every exported span's resource is the service
// resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, host, node) merged
// with the span's own pod resource, so one batch can hold several pods'
// resources.
package otlp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"

	"github.com/podchron/podchron/internal/correlate"
)

// Defaults for Config's zero fields.
const (
	DefaultQueueSize = 4096
	DefaultBatchSize = 512
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

// Config tunes an Exporter. The zero value is usable: the OTLP client comes
// from the environment and every size and time has its default.
type Config struct {
	// Client is the SDK span exporter to send batches with. Nil: built from
	// the standard OTEL_EXPORTER_OTLP_* environment (NewClientFromEnv).
	Client sdktrace.SpanExporter

	// QueueSize bounds the spans waiting for export (default 4096). Emit
	// drops, and counts, what does not fit.
	QueueSize int
	// BatchSize is the most spans sent in one export call (default 512).
	BatchSize int
	// BatchTimeout is how long a partial batch waits for more spans
	// (default 100ms).
	BatchTimeout time.Duration
	// MaxRetryTime bounds the time spent retrying one failed batch before
	// it is dropped (default 30s). Negative: no retry.
	MaxRetryTime time.Duration
	// InitialBackoff and MaxBackoff shape the exponential backoff between
	// retries (defaults 500ms and 5s), with jitter.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration

	// ServiceVersion, when set, becomes service.version.
	ServiceVersion string
	// NodeName, when set, becomes k8s.node.name on the service resource
	// (a pod's own resource attributes take precedence).
	NodeName string
	// Resource, when set, replaces the detected service resource
	// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, host.name, ...).
	Resource *resource.Resource

	// Logger receives export errors, rate limited (default slog.Default()).
	Logger *slog.Logger
	// LogInterval is the least time between two export-failure log lines
	// (default 1m); failures in between are counted and reported with the
	// next line.
	LogInterval time.Duration
}

func (c *Config) setDefaults() {
	if c.QueueSize <= 0 {
		c.QueueSize = DefaultQueueSize
	}
	if c.BatchSize <= 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchTimeout <= 0 {
		c.BatchTimeout = DefaultBatchTimeout
	}
	if c.MaxRetryTime == 0 {
		c.MaxRetryTime = DefaultMaxRetryTime
	}
	if c.InitialBackoff <= 0 {
		c.InitialBackoff = DefaultInitialBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.InitialBackoff {
		c.MaxBackoff = c.InitialBackoff
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.LogInterval <= 0 {
		c.LogInterval = DefaultLogInterval
	}
}

// Drop reasons, as used by Drops.ByReason.
const (
	ReasonQueueFull    = "queue_full"
	ReasonExportFailed = "export_failed"
	ReasonShutdown     = "shutdown"
)

// Drops counts dropped spans by reason.
type Drops struct {
	// QueueFull: Emit found the queue full (collector slow or down).
	QueueFull uint64
	// ExportFailed: the batch still failed when its retry time ran out, or
	// the exporter rejected it permanently.
	ExportFailed uint64
	// Shutdown: emitted after Shutdown, or still queued when Shutdown's
	// context ended.
	Shutdown uint64
}

// Total is the sum over all reasons.
func (d Drops) Total() uint64 { return d.QueueFull + d.ExportFailed + d.Shutdown }

// ByReason returns the counts keyed by reason (queue_full, export_failed,
// shutdown), every reason present.
func (d Drops) ByReason() map[string]uint64 {
	return map[string]uint64{
		ReasonQueueFull:    d.QueueFull,
		ReasonExportFailed: d.ExportFailed,
		ReasonShutdown:     d.Shutdown,
	}
}

// Exporter is a correlate.Sink that batches spans and exports them over
// OTLP. Emit never blocks. A single goroutine, started by New and stopped by
// Shutdown, owns batching and export.
type Exporter struct {
	cfg    Config
	client sdktrace.SpanExporter
	base   *resource.Resource
	scope  instrumentation.Scope
	log    *slog.Logger

	// mu guards closed against Emit racing Shutdown: Emit sends under the
	// read lock, so once Shutdown holds the write lock and sets closed, no
	// span can enter the queue behind the final drain.
	mu     sync.RWMutex
	closed bool

	queue   chan correlate.Span
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

	// Owned by the export goroutine.
	lastLog       time.Time
	suppressed    int
	failing       bool
	loggedFailure bool
	giveUp        bool
	resCache      map[attribute.Distinct]*resource.Resource
}

// New starts an Exporter. With cfg.Client nil it builds the OTLP client from
// the environment (see NewClientFromEnv); ctx bounds only that setup.
func New(ctx context.Context, cfg Config) (*Exporter, error) {
	cfg.setDefaults()
	client := cfg.Client
	if client == nil {
		c, _, err := NewClientFromEnv(ctx)
		if err != nil {
			return nil, err
		}
		client = c
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
		base:    base,
		scope:   instrumentation.Scope{Name: ScopeName, Version: cfg.ServiceVersion},
		log:     cfg.Logger,
		queue:   make(chan correlate.Span, cfg.QueueSize),
		flushCh: make(chan chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go e.run()
	return e, nil
}

// ServiceResource is podchron's own resource: service.name "podchron"
// unless OTEL_SERVICE_NAME says otherwise, OTEL_RESOURCE_ATTRIBUTES, the
// SDK's telemetry.sdk.*, and k8s.node.name when nodeName is set. No host.*:
// the spans are about the node, and from inside the tracer's container the
// host detector would name the tracer's pod. It may return a usable
// resource together with an error.
func ServiceResource(ctx context.Context, version, nodeName string) (*resource.Resource, error) {
	attrs := []attribute.KeyValue{semconv.ServiceNameKey.String(DefaultServiceName)}
	if version != "" {
		attrs = append(attrs, semconv.ServiceVersionKey.String(version))
	}
	if nodeName != "" {
		attrs = append(attrs, semconv.K8SNodeNameKey.String(nodeName))
	}
	// Later options win: the environment overrides the defaults.
	res, err := resource.New(ctx,
		resource.WithSchemaURL(semconv.SchemaURL),
		resource.WithAttributes(attrs...),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if res == nil {
		res = resource.NewSchemaless(attrs...)
	}
	return res, err
}

// Emit queues s for export. It never blocks: when the queue is full, or
// after Shutdown, the span is dropped and counted. The queue keeps s's
// slices (Attrs, Events, Resource): the caller must not modify them after
// Emit.
func (e *Exporter) Emit(s correlate.Span) {
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
		cerr := e.client.Shutdown(ctx)
		e.cancel()
		e.shutdownErr = errors.Join(err, cerr)
	})
	return e.shutdownErr
}

func (e *Exporter) run() {
	defer close(e.done)
	batch := make([]correlate.Span, 0, e.cfg.BatchSize)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	timerOn := false
	stopTimer := func() {
		if timerOn {
			timer.Stop()
			timerOn = false
		}
	}
	send := func() {
		stopTimer()
		if len(batch) > 0 {
			e.export(batch)
			batch = batch[:0]
		}
	}
	// drain moves what is queued right now into batches and sends them.
	drain := func() {
		for {
			select {
			case s := <-e.queue:
				batch = append(batch, s)
				if len(batch) >= e.cfg.BatchSize {
					send()
				}
			default:
				send()
				return
			}
		}
	}
	for {
		select {
		case s := <-e.queue:
			batch = append(batch, s)
			if len(batch) >= e.cfg.BatchSize {
				send()
			} else if !timerOn {
				timer.Reset(e.cfg.BatchTimeout)
				timerOn = true
			}
		case <-timer.C:
			timerOn = false
			send()
		case reply := <-e.flushCh:
			drain()
			close(reply)
		case <-e.stop:
			drain()
			return
		}
	}
}

// export sends one batch, retrying with backoff until it succeeds, its
// retry time runs out, or Shutdown's context ends.
func (e *Exporter) export(batch []correlate.Span) {
	if e.ctx.Err() != nil {
		// Shutdown's context is over: do not even try.
		e.dropShutdown.Add(uint64(len(batch)))
		return
	}
	if e.giveUp {
		// Shutting down and an earlier batch already failed for good:
		// the collector is not there, do not hold the shutdown.
		e.dropFailed.Add(uint64(len(batch)))
		e.failedBatches.Add(1)
		return
	}
	spans := e.convert(batch)
	deadline := time.Now().Add(max(e.cfg.MaxRetryTime, 0))
	backoff := e.cfg.InitialBackoff
	for attempt := 1; ; attempt++ {
		err := e.client.ExportSpans(e.ctx, spans)
		if err == nil {
			e.exported.Add(uint64(len(spans)))
			e.recovered()
			return
		}
		if e.ctx.Err() != nil {
			e.dropShutdown.Add(uint64(len(batch)))
			e.failedBatches.Add(1)
			e.logFailure(err, len(batch), attempt, "dropped at shutdown")
			return
		}
		wait := jitter(backoff)
		if time.Now().Add(wait).After(deadline) {
			e.dropFailed.Add(uint64(len(batch)))
			e.failedBatches.Add(1)
			e.logFailure(err, len(batch), attempt, "dropped")
			if e.stopping() {
				e.giveUp = true
			}
			return
		}
		e.logFailure(err, len(batch), attempt, "retrying")
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-e.ctx.Done():
			t.Stop()
		}
		backoff = min(backoff*2, e.cfg.MaxBackoff)
	}
}

func (e *Exporter) stopping() bool {
	select {
	case <-e.stop:
		return true
	default:
		return false
	}
}

// jitter spreads d over [d/2, d].
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// convert builds the SDK spans of a batch. Spans of the same pod share one
// merged resource: the merge is done once per distinct pod resource and
// cached (the cache is cleared when it grows past the queue size).
func (e *Exporter) convert(batch []correlate.Span) []sdktrace.ReadOnlySpan {
	if e.resCache == nil || len(e.resCache) > e.cfg.QueueSize {
		e.resCache = make(map[attribute.Distinct]*resource.Resource)
	}
	out := make([]sdktrace.ReadOnlySpan, 0, len(batch))
	for _, s := range batch {
		out = append(out, ReadOnlySpan(s, e.resourceFor(s.Resource), e.scope))
	}
	return out
}

func (e *Exporter) resourceFor(attrs []correlate.Attr) *resource.Resource {
	if len(attrs) == 0 {
		return e.base
	}
	set := attribute.NewSet(KeyValues(attrs)...)
	key := set.Equivalent()
	if r, ok := e.resCache[key]; ok {
		return r
	}
	r, err := resource.Merge(e.base, resource.NewSchemaless(set.ToSlice()...))
	if err != nil {
		// Cannot happen with a schemaless right-hand side; keep the pod
		// attributes anyway.
		r = resource.NewSchemaless(append(e.base.Attributes(), set.ToSlice()...)...)
	}
	e.resCache[key] = r
	return r
}

// logFailure logs export failures, at most one line per LogInterval; the
// failures in between are counted into the next line.
func (e *Exporter) logFailure(err error, spans, attempt int, outcome string) {
	e.failing = true
	now := time.Now()
	if !e.lastLog.IsZero() && now.Sub(e.lastLog) < e.cfg.LogInterval {
		e.suppressed++
		return
	}
	e.lastLog = now
	e.loggedFailure = true
	_, dropped, failed := e.Stats()
	e.log.Error("otlp: span export failed",
		"err", err, "spans", spans, "attempt", attempt, "outcome", outcome,
		"suppressed_since_last_log", e.suppressed,
		"dropped_total", dropped, "failed_batches_total", failed)
	e.suppressed = 0
}

// recovered logs when exports succeed again after failures, once per
// failure line logged (so a flapping collector costs at most two lines per
// LogInterval).
func (e *Exporter) recovered() {
	if !e.failing {
		return
	}
	e.failing = false
	if !e.loggedFailure {
		return
	}
	e.loggedFailure = false
	_, dropped, failed := e.Stats()
	e.log.Info("otlp: span export recovered",
		"failures_not_logged", e.suppressed,
		"dropped_total", dropped, "failed_batches_total", failed)
}

// String describes the exporter for logs.
func (e *Exporter) String() string {
	return fmt.Sprintf("otlp(queue=%d batch=%d timeout=%s)", e.cfg.QueueSize, e.cfg.BatchSize, e.cfg.BatchTimeout)
}

var _ correlate.Sink = (*Exporter)(nil)
