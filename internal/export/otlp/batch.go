// The export loop: batches from the queue, retries with backoff, the
// per-pod resources.

package otlp

import (
	"math/rand/v2"
	"time"

	"github.com/podchron/podchron/internal/span"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func (e *Exporter) run() {
	defer close(e.done)
	batch := make([]span.Span, 0, e.cfg.BatchSize)
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
func (e *Exporter) export(batch []span.Span) {
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
func (e *Exporter) convert(batch []span.Span) []sdktrace.ReadOnlySpan {
	if e.resCache == nil || len(e.resCache) > e.cfg.QueueSize {
		e.resCache = make(map[attribute.Distinct]*resource.Resource)
	}
	out := make([]sdktrace.ReadOnlySpan, 0, len(batch))
	for _, s := range batch {
		out = append(out, ReadOnlySpan(s, e.resourceFor(s.Resource), e.scope))
	}
	return out
}

func (e *Exporter) resourceFor(attrs []span.Attr) *resource.Resource {
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
