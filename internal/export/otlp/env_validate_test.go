package otlp

import (
	"strings"
	"testing"
)

func TestValidateEnv(t *testing.T) {
	for _, tc := range []struct {
		endpoint, traces, proto string
		wantErr                 string
	}{
		{endpoint: "http://collector:4317"},
		{endpoint: "collector.observability:4317"},
		{endpoint: "https://tempo.example:443", proto: "http/protobuf"},
		{traces: "http://127.0.0.1:4318/v1/traces", proto: "http/protobuf"},
		{endpoint: "[::1]:4317"},
		{endpoint: "garbage", wantErr: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{endpoint: "collector:notaport", wantErr: "port"},
		{endpoint: "ftp://collector:21", wantErr: "scheme"},
		{endpoint: "http://:4317", wantErr: "no host"},
		{endpoint: "collector:4318", proto: "http/protobuf", wantErr: "want a URL"},
		{traces: "http://collector:99999", wantErr: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{endpoint: "http://collector:4317", proto: "carrier-pigeon", wantErr: "unsupported OTLP protocol"},
	} {
		t.Setenv(EnvEndpoint, tc.endpoint)
		t.Setenv(EnvTracesEndpoint, tc.traces)
		t.Setenv(EnvProtocol, tc.proto)
		t.Setenv(EnvTracesProtocol, "")
		err := ValidateEnv()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tc, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%+v: error %v, want one mentioning %q", tc, err, tc.wantErr)
		}
	}
}
