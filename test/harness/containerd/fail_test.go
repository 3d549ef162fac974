package containerd_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/test/harness/containerd"
)

// A containerd binary that is present but does not work makes New fail
// (tests using Start then fail rather than skip), with containerd's output
// in the error and nothing left on the host.
func TestNewFailsWhenContainerdBroken(t *testing.T) {
	if err := containerd.CheckRequirements(); err != nil {
		t.Skip(err)
	}
	broken := filepath.Join(t.TempDir(), "containerd")
	if err := os.WriteFile(broken, []byte("#!/bin/sh\necho 'containerd: simulated startup failure' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := containerd.ContainerdBinary
	containerd.ContainerdBinary = broken
	defer func() { containerd.ContainerdBinary = orig }()

	before, _ := filepath.Glob(filepath.Join(os.TempDir(), "ptctrd-*"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := containerd.New(ctx, containerd.Config{Logger: containerd.TestLogger(t, slog.LevelInfo)})
	if err == nil {
		_ = h.Close(ctx)
		t.Fatal("New succeeded with a broken containerd")
	}
	if errors.Is(err, containerd.ErrRequirements) {
		t.Fatalf("broken containerd reported as missing requirement: %v", err)
	}
	if !strings.Contains(err.Error(), "simulated startup failure") {
		t.Errorf("error lacks containerd's output: %v", err)
	}
	t.Logf("error: %v", err)
	after, _ := filepath.Glob(filepath.Join(os.TempDir(), "ptctrd-*"))
	if len(after) > len(before) {
		t.Errorf("runtime dirs left: before %v after %v", before, after)
	}
}
