package otlp

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
)

// Standard OpenTelemetry exporter environment variables. The SDK exporters
// read the endpoint, headers, insecure, certificate, compression and timeout
// variables themselves; podchron reads the endpoint variables to decide
// whether OTLP is configured at all, and the protocol variables to pick the
// gRPC or HTTP exporter.
const (
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Protocol is an OTLP transport.
type Protocol string

// The OTLP protocols (OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	ProtocolGRPC         Protocol = "grpc"
	ProtocolHTTPProtobuf Protocol = "http/protobuf"
	ProtocolHTTPJSON     Protocol = "http/json"
)

// Configured reports whether an OTLP endpoint is set in the environment
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT). When
// none is, the tracer prints a console timeline instead.
func Configured() bool {
	return strings.TrimSpace(os.Getenv(EnvEndpoint)) != "" ||
		strings.TrimSpace(os.Getenv(EnvTracesEndpoint)) != ""
}

// ProtocolFromEnv returns the traces protocol from
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL, else
// grpc. An unknown value is an error.
func ProtocolFromEnv() (Protocol, error) {
	v := strings.TrimSpace(os.Getenv(EnvTracesProtocol))
	name := EnvTracesProtocol
	if v == "" {
		v = strings.TrimSpace(os.Getenv(EnvProtocol))
		name = EnvProtocol
	}
	switch Protocol(strings.ToLower(v)) {
	case "", ProtocolGRPC:
		return ProtocolGRPC, nil
	case ProtocolHTTPProtobuf:
		return ProtocolHTTPProtobuf, nil
	case ProtocolHTTPJSON:
		return ProtocolHTTPJSON, nil
	}
	return "", fmt.Errorf("%s=%q: unsupported OTLP protocol (want grpc, http/protobuf or http/json)", name, v)
}

// NewClientFromEnv builds an OTLP trace client (gRPC or HTTP, from the
// protocol variables) configured by the standard environment variables,
// with cfg's retry settings (zero fields take their defaults). Exporter
// starts and stops it.
//
// The clients' own retry does what the OTLP specification asks: gRPC
// retries Canceled, DeadlineExceeded, Aborted, OutOfRange, Unavailable and
// DataLoss, and ResourceExhausted only with a RetryInfo, waiting at least
// RetryInfo's delay; HTTP retries 429, 502, 503 and 504, waiting at least
// Retry-After (seconds or a date). Anything else fails at once. A retry
// whose wait would overrun cfg.MaxRetryTime is not made (the batch is
// dropped and counted, so the queue keeps moving). gRPC's whole export,
// retries included, is also bounded by OTEL_EXPORTER_OTLP_TIMEOUT (10 s by
// default).
func NewClientFromEnv(cfg Config) (otlptrace.Client, Protocol, error) {
	cfg.setDefaults()
	proto, err := ProtocolFromEnv()
	if err != nil {
		return nil, "", err
	}
	retry := otlptracegrpc.RetryConfig{
		Enabled:         cfg.MaxRetryTime > 0,
		InitialInterval: cfg.InitialBackoff,
		MaxInterval:     cfg.MaxBackoff,
		MaxElapsedTime:  max(cfg.MaxRetryTime, 0),
	}
	if proto == ProtocolGRPC {
		return otlptracegrpc.NewClient(
			otlptracegrpc.WithRetry(retry),
			otlptracegrpc.WithDialOption(grpcReconnect(cfg.MaxBackoff)...),
		), proto, nil
	}
	enc := otlptracehttp.EncodingProtobuf
	if proto == ProtocolHTTPJSON {
		enc = otlptracehttp.EncodingJSON
	}
	return otlptracehttp.NewClient(
		otlptracehttp.WithEncoding(enc),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig(retry)),
	), proto, nil
}

// grpcReconnect makes a gRPC export resume within about maxDelay of the
// collector coming back: gRPC's own connection backoff (up to 120 s by
// default) is capped at maxDelay, and an export waits for the connection to
// be ready (within its timeout) instead of failing at once while the
// channel is reconnecting.
func grpcReconnect(maxDelay time.Duration) []grpc.DialOption {
	bo := grpcbackoff.DefaultConfig
	bo.BaseDelay = min(bo.BaseDelay, maxDelay)
	bo.MaxDelay = maxDelay
	return []grpc.DialOption{
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: grpcMinConnectTimeout}),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)),
	}
}

// grpcMinConnectTimeout is gRPC's default: a connection attempt may take
// this long before it is given up.
const grpcMinConnectTimeout = 20 * time.Second

// ValidateEnv checks the OTLP variables podchron and the SDK read, so that a
// typo fails the tracer at start-up with a clear message instead of spans
// silently going nowhere: the protocol must be known and each endpoint set
// must be a URL with an http or https scheme and a host (gRPC also takes a
// bare host:port).
func ValidateEnv() error {
	proto, err := ProtocolFromEnv()
	if err != nil {
		return err
	}
	for _, name := range []string{EnvEndpoint, EnvTracesEndpoint} {
		v := strings.TrimSpace(os.Getenv(name))
		if v == "" {
			continue
		}
		if err := validateEndpoint(v, proto); err != nil {
			return fmt.Errorf("%s=%q: %w", name, v, err)
		}
	}
	return nil
}

func validateEndpoint(v string, proto Protocol) error {
	if !strings.Contains(v, "://") {
		if proto != ProtocolGRPC {
			return fmt.Errorf("want a URL such as http://collector:4318 for %s", proto)
		}
		host, port, err := net.SplitHostPort(v)
		if err != nil || host == "" {
			return fmt.Errorf("want host:port or a URL such as http://collector:4317: %w", errOr(err, "no host"))
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("port %q: %w", port, err)
		}
		return nil
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("not a URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("scheme %q: want http or https", u.Scheme)
	}
	if u.Hostname() == "" {
		return errors.New("no host")
	}
	if p := u.Port(); p != "" {
		if _, err := strconv.ParseUint(p, 10, 16); err != nil {
			return fmt.Errorf("port %q: %w", p, err)
		}
	}
	return nil
}

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return errors.New(msg)
}
