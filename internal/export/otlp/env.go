package otlp

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"go.opentelemetry.io/otel/sdk/resource"
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

// ValidateEnv checks every OTEL_* variable podchron and the SDK read, so
// that a typo fails the tracer at start-up with a clear message naming the
// variable instead of spans silently going nowhere (the SDK drops what it
// cannot parse with one unstructured log line: a malformed auth header then
// costs every span a 401). It checks, for the general and the TRACES_
// variable of each: the protocol, the endpoints (a URL with an http or https
// scheme and a host; gRPC also takes a bare host:port), the headers (see
// checkHeaders; values are never printed, they are often secrets), the CA
// and client certificate and key files (present and PEM), the timeout
// (non-negative integer milliseconds), the compression (gzip or none) and
// insecure (true or false); and OTEL_RESOURCE_ATTRIBUTES.
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
	for _, prefix := range []string{envPrefix, envTracesPrefix} {
		if err := validateSettings(prefix); err != nil {
			return err
		}
	}
	return validateResource()
}

// The OTLP exporter variables' prefixes: the general one, and the traces
// one that overrides it.
const (
	envPrefix       = "OTEL_EXPORTER_OTLP_"
	envTracesPrefix = "OTEL_EXPORTER_OTLP_TRACES_"
)

// validateSettings checks prefix's HEADERS, CERTIFICATE, CLIENT_CERTIFICATE,
// CLIENT_KEY, TIMEOUT, COMPRESSION and INSECURE, each as the SDK reads it
// (trimmed; empty is unset).
func validateSettings(prefix string) error {
	get := func(suffix string) (string, string) {
		return prefix + suffix, strings.TrimSpace(os.Getenv(prefix + suffix))
	}
	if name, v := get("HEADERS"); v != "" {
		if err := checkHeaders(v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if name, v := get("CERTIFICATE"); v != "" {
		if err := checkCA(v); err != nil {
			return fmt.Errorf("%s=%q: %w", name, v, err)
		}
	}
	certName, certPath := get("CLIENT_CERTIFICATE")
	keyName, keyPath := get("CLIENT_KEY")
	if err := checkClientCert(certName, certPath, keyName, keyPath); err != nil {
		return err
	}
	if name, v := get("TIMEOUT"); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err != nil || ms < 0 {
			return fmt.Errorf("%s=%q: want a non-negative whole number of milliseconds (10000 is 10 s)", name, v)
		}
	}
	if name, v := get("COMPRESSION"); v != "" && v != "gzip" && v != "none" {
		return fmt.Errorf("%s=%q: want gzip or none", name, v)
	}
	if name, v := get("INSECURE"); v != "" && !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
		return fmt.Errorf("%s=%q: want true or false", name, v)
	}
	return nil
}

// checkHeaders parses a headers variable as the SDK does: comma-separated
// key=value pairs (W3C baggage style), the value URL-encoded, both trimmed.
// Where the SDK drops a bad pair with a log line, this is an error: a pair
// without '=', an empty or invalid key (not an HTTP token), a value that
// does not URL-decode or decodes to control characters. The error names the
// pair by position and key, never its value.
func checkHeaders(v string) error {
	for i, pair := range strings.Split(v, ",") {
		n := i + 1
		key, val, ok := strings.Cut(pair, "=")
		key = strings.TrimSpace(key)
		switch {
		case strings.TrimSpace(pair) == "":
			return fmt.Errorf("pair %d is empty (want key=value,key2=value2)", n)
		case !ok:
			return fmt.Errorf("pair %d has no '=' (want key=value,key2=value2; its text is not shown, it may be a secret)", n)
		case key == "":
			return fmt.Errorf("pair %d has an empty key (want key=value)", n)
		case !isToken(key):
			return fmt.Errorf("pair %d: key %q is not a valid header name", n, key)
		}
		dec, err := url.PathUnescape(val)
		if err != nil {
			return fmt.Errorf("pair %d (%s=***): the value is not valid URL encoding (write %%2C for ',', %%3D for '=', %%25 for '%%')", n, key)
		}
		if strings.ContainsFunc(dec, func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }) {
			return fmt.Errorf("pair %d (%s=***): the value holds a control character", n, key)
		}
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110), what a header name
// must be.
func isToken(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return s != ""
}

// checkCA reads a CA bundle: it must hold at least one PEM certificate.
func checkCA(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !x509.NewCertPool().AppendCertsFromPEM(b) {
		return errors.New("no PEM certificate in the file")
	}
	return nil
}

// checkClientCert checks a client certificate and key variable pair: set
// together, and the files a matching PEM certificate and key.
func checkClientCert(certName, certPath, keyName, keyPath string) error {
	switch {
	case certPath == "" && keyPath == "":
		return nil
	case keyPath == "":
		return fmt.Errorf("%s is set but %s is not: set both or neither", certName, keyName)
	case certPath == "":
		return fmt.Errorf("%s is set but %s is not: set both or neither", keyName, certName)
	}
	cert, err := os.ReadFile(certPath)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", certName, certPath, err)
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return fmt.Errorf("%s=%q: %w", keyName, keyPath, err)
	}
	if _, err := tls.X509KeyPair(cert, key); err != nil {
		return fmt.Errorf("%s=%q, %s=%q: not a PEM certificate and matching key: %w", certName, certPath, keyName, keyPath, err)
	}
	return nil
}

// validateResource checks OTEL_RESOURCE_ATTRIBUTES (and OTEL_SERVICE_NAME)
// as the SDK's resource detector reads them.
func validateResource() error {
	if _, err := resource.New(context.Background(), resource.WithFromEnv()); err != nil {
		return fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
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
