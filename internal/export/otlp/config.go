// The exporter's settings and podchron's own OTLP resource.

package otlp

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
)

// Config tunes an Exporter. The zero value is usable: the OTLP client comes
// from the environment and every size and time has its default.
type Config struct {
	// Client is the OTLP client to send batches with; Exporter starts and
	// stops it. Nil: built from the standard OTEL_EXPORTER_OTLP_*
	// environment (NewClientFromEnv).
	Client otlptrace.Client

	// QueueSize bounds the spans waiting for export (default 4096). Emit
	// drops, and counts, what does not fit.
	QueueSize int
	// BatchSize is the most spans sent in one export call (default 512).
	BatchSize int
	// MaxBatchBytes bounds the encoded size of one export request (default
	// 3 MiB, below the collector's default 4 MiB gRPC receive limit). A
	// span that alone exceeds it is dropped and counted (too_large).
	MaxBatchBytes int
	// BatchTimeout is how long a partial batch waits for more spans
	// (default 100ms).
	BatchTimeout time.Duration
	// MaxRetryTime bounds the time spent retrying one failed batch before
	// it is dropped (default 30s). Negative: no retry. Only what the OTLP
	// specification calls retryable is retried (see NewClientFromEnv), and
	// an HTTP collector that cannot be reached.
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
	if c.MaxBatchBytes <= 0 {
		c.MaxBatchBytes = DefaultMaxBatchBytes
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
