package otlp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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

// NewClientFromEnv builds an OTLP span exporter (gRPC or HTTP, from the
// protocol variables) configured by the standard environment variables.
//
// The exporter's own retry is turned off: Exporter retries whole batches
// itself, bounded in time, and counts what it gives up on. Stacking the SDK's
// retry (up to a minute per call by default) under it would only stretch the
// time a batch holds the pipeline and hide failures from the counters.
func NewClientFromEnv(ctx context.Context) (sdktrace.SpanExporter, Protocol, error) {
	proto, err := ProtocolFromEnv()
	if err != nil {
		return nil, "", err
	}
	var exp sdktrace.SpanExporter
	switch proto {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx,
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false}))
	default:
		enc := otlptracehttp.EncodingProtobuf
		if proto == ProtocolHTTPJSON {
			enc = otlptracehttp.EncodingJSON
		}
		exp, err = otlptracehttp.New(ctx,
			otlptracehttp.WithEncoding(enc),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	}
	if err != nil {
		return nil, "", fmt.Errorf("otlp %s exporter: %w", proto, err)
	}
	return exp, proto, nil
}

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
