package containerd_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podchron/podchron/test/harness/containerd"
)

func TestResolveRuntime(t *testing.T) {
	ctx := context.Background()
	if _, err := containerd.ResolveRuntime(ctx, "kata"); err == nil || errors.Is(err, containerd.ErrRequirements) {
		t.Errorf("unknown name: want a plain error, got %v", err)
	}
	if _, err := containerd.ResolveRuntime(ctx, "/nonexistent/runc"); err == nil || errors.Is(err, containerd.ErrRequirements) {
		t.Errorf("missing path asked for explicitly: want a plain error, got %v", err)
	}
	bin := filepath.Join(t.TempDir(), "myruntime")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'myruntime version 9.9'\necho 'spec: 1.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rt, err := containerd.ResolveRuntime(ctx, bin)
	if err != nil || rt.Name != bin || rt.Binary != bin {
		t.Fatalf("path: %+v %v", rt, err)
	}
	if v, err := rt.Version(ctx); err != nil || v != "myruntime version 9.9" {
		t.Errorf("version: %q %v", v, err)
	}
	t.Setenv(containerd.RuncUpstreamEnv, "/nonexistent/upstream-runc")
	if _, err := containerd.ResolveRuntime(ctx, "runc-upstream"); err == nil || errors.Is(err, containerd.ErrRequirements) ||
		!strings.Contains(err.Error(), containerd.RuncUpstreamEnv) {
		t.Errorf("runc-upstream with a bad $%s: want a plain error naming it, got %v", containerd.RuncUpstreamEnv, err)
	}
	t.Setenv(containerd.RuncUpstreamEnv, bin)
	if rt, err := containerd.ResolveRuntime(ctx, "runc-upstream"); err != nil || rt.Name != "runc-upstream" || rt.Binary != bin {
		t.Errorf("runc-upstream from $%s: %+v %v", containerd.RuncUpstreamEnv, rt, err)
	}
	t.Setenv(containerd.RuntimeEnv, "runc-upstream")
	if rt, err := containerd.DefaultRuntime(ctx); err != nil || rt.Name != "runc-upstream" {
		t.Errorf("default from $%s: %+v %v", containerd.RuntimeEnv, rt, err)
	}
	for _, name := range []string{"runc", "crun"} {
		rt, err := containerd.ResolveRuntime(ctx, name)
		if errors.Is(err, containerd.ErrRequirements) {
			t.Logf("%s: %v", name, err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		v, err := rt.Version(ctx)
		if err != nil || !strings.HasPrefix(v, name+" version ") {
			t.Errorf("%s version: %q %v", name, v, err)
		}
		t.Logf("%s: %s", rt, v)
	}
}
