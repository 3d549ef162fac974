// OTLP partial success, as the SDK's trace clients report it.

package otlp

import "reflect"

// rejectedSpans finds the partial success in an error from
// otlptrace.Client.UploadTraces: the request succeeded, but the collector
// rejected rejected spans of it (OTLP partial_success; rejected may be 0
// with only a warning message).
//
// Both the gRPC and the HTTP client (v1.47) join it into UploadTraces's
// error as their internal PartialSuccess type, after a successful attempt
// and without retrying. Code outside the SDK's module cannot name that
// type (its As method answers only to the internal type), so its exported
// RejectedItems field is read by reflection. The other ways to see it
// would be the global otel error handler (older SDKs, shared by the whole
// process) or a hand-written OTLP transport that gives up the SDK's
// OTEL_EXPORTER_OTLP_* handling (headers, TLS, compression, JSON).
// TestPartialSuccess runs both clients against real receivers, so an SDK
// that changes this fails the tests, not production.
func rejectedSpans(err error) (rejected int64, ok bool) {
	if err == nil {
		return 0, false
	}
	v := reflect.ValueOf(err)
	if v.Kind() == reflect.Struct && v.Type().Name() == "PartialSuccess" {
		if f := v.FieldByName("RejectedItems"); f.IsValid() && f.Kind() == reflect.Int64 {
			return f.Int(), true
		}
	}
	// The error tree is walked by hand: errors.As cannot look for a type
	// that cannot be named.
	switch u := err.(type) { //nolint:errorlint // see above
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if n, ok := rejectedSpans(e); ok {
				return n, true
			}
		}
	case interface{ Unwrap() error }:
		return rejectedSpans(u.Unwrap())
	}
	return 0, false
}
