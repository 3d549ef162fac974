package main

import (
	"bytes"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad settings fail before anything is loaded: each error names the
// setting, and comes from the checks (a probe load would fail differently,
// or succeed, as root).
func TestSettingsCheckedBeforeProbesLoad(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"output", []string{"--output=xml"}, nil, "--output"},
		{"log level", []string{"--log-level=loud"}, nil, "--log-level"},
		{"log format", []string{"--log-format=xml"}, nil, "--log-format"},
		{"cgroup mode", []string{"--cgroup-mode=v3"}, nil, "--cgroup-mode"},
		{"ring size", []string{"--ringbuf-size=1000"}, nil, "power of two"},
		{"cgroup root", []string{"--cgroup-root=kubepods"}, nil, "must start with /"},
		{"stuck after", []string{"--stuck-after=0s"}, nil, "--stuck-after"},
		{"stray argument", []string{"--no-api", "extra"}, nil, "unexpected argument"},
		{"otlp endpoint", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "garbage"}, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"otlp protocol", nil, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "smoke"}, "unsupported OTLP protocol"},
		{"metrics port busy", []string{"--metrics-addr=" + busy.Addr().String()}, nil, "already in use"},
		{"record path", []string{"--metrics-addr="}, nil, "record:"},
		{"events output", []string{"events", "--output=xml"}, nil, "--output"},
		{"events ring size", []string{"events", "--ringbuf-size=3"}, nil, "power of two"},
		{"command args", []string{"--command-args=some"}, nil, "--command-args"},
		{"namespace filter", []string{"--namespace-exclude=kube-(system"}, nil, "--namespace-exclude"},
		{"events command args", []string{"events", "--command-args=all"}, nil, "--command-args"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
			t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := tc.args
			if tc.name == "record path" {
				args = append([]string{"record", filepath.Join(t.TempDir(), "no", "such", "dir", "x.jsonl")}, args...)
			}
			var out, errb bytes.Buffer
			err := run(args, &out, &errb)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run %q: error %v, want one mentioning %q", args, err, tc.want)
			}
			if strings.Contains(errb.String(), "probes attached") {
				t.Errorf("probes were attached before the error: %s", errb.String())
			}
		})
	}
}

func TestHelpListsFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-h"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"-cgroup-root", "-all-signals", "-log-format", "-metrics-addr", "-output", "-runtime-endpoint", "tracer version"} {
		if !strings.Contains(out.String(), f) {
			t.Errorf("help lacks %s:\n%s", f, out.String())
		}
	}
	out.Reset()
	if err := run([]string{"events", "-h"}, &out, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-all-signals") {
		t.Errorf("events -h: %v\n%s", err, out.String())
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"version"}, &out, os.Stderr); err != nil || !strings.HasPrefix(out.String(), "tracer "+version+" (go") {
		t.Errorf("version: %v %q", err, out.String())
	}
}
