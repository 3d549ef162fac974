package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/record"
)

// recordEnv names a directory: the run then also records the input stream
// a tracer on this node takes in (`tracer record`, a second tracer run on
// the host beside the DaemonSet's, with the same flags), and at the end
// writes it whole (e2e.jsonl) and split by namespace
// (record.SplitByNamespace), one file per scenario namespace under
// namespaces/. internal/correlate's restart property
// (TestRestartAtEveryInput) runs on the scenarios' streams committed to
// internal/correlate/testdata/e2e. Not set in `make test`: recording is
// for making those files, not for checking a run.
const recordEnv = "PODCHRON_E2E_RECORD"

// recordTail is how long after a namespace's last fact its stream keeps
// the facts about no pod (progress, ticks): its traces' timers (settle
// windows, the retention of ended pods) run out as they did.
const recordTail = 90 * time.Second

// startRecorder starts the recording tracer when recordEnv is set; its
// cleanup stops it (SIGINT: the stream is flushed) and splits the stream.
func (e *env) startRecorder(t *testing.T) {
	dir := os.Getenv(recordEnv)
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("%s: %v", recordEnv, err)
	}
	bin := filepath.Join(e.work, "tracer-recorder")
	if out, err := runCmd(e.ctx, e.repo, nil, "go", "build", "-o", bin, "./cmd/tracer"); err != nil {
		t.Fatalf("building the recording tracer: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "e2e.jsonl")
	args := append([]string{"record", file, "--kubeconfig", e.cluster.Kubeconfig, "--node-name", e.cluster.NodeName(),
		"--runtime-endpoint", "unix://" + e.runtime.Socket, "--metrics-addr=", "--output=none", "--state-dir="}, tracerArgs...)
	cmd := exec.Command(bin, args...)
	logf, err := os.Create(filepath.Join(dir, "recorder.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the recording tracer: %v", err)
	}
	t.Logf("recording the node's input stream to %s (log: %s)", file, logf.Name())
	t.Cleanup(func() {
		defer logf.Close()
		if err := stopRecorder(cmd); err != nil {
			t.Errorf("recording tracer: %v (log: %s)", err, logf.Name())
			return
		}
		n, err := splitRecording(file, dir)
		if err != nil {
			t.Errorf("splitting %s: %v", file, err)
			return
		}
		t.Logf("recorded %s, split into %d namespaces in %s", file, n, dir)
	})
}

func stopRecorder(cmd *exec.Cmd) error {
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return fmt.Errorf("did not stop within 30 s of SIGINT: %w", <-done)
	}
}

// splitRecording writes file's stream split by namespace into dir, as
// <namespace>.jsonl.
func splitRecording(file, dir string) (int, error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	inputs, err := record.ReadAll(f)
	var torn *record.TornLineError
	if err != nil && !errors.As(err, &torn) {
		return 0, err
	}
	// Each namespace's stream goes under namespaces/: a namespace named
	// like the node's file ("e2e") once overwrote it there.
	nsDir := filepath.Join(dir, "namespaces")
	if err := os.MkdirAll(nsDir, 0o755); err != nil {
		return 0, err
	}
	split := record.SplitByNamespace(inputs, recordTail)
	for ns, st := range split {
		if err := writeStream(filepath.Join(nsDir, strings.ReplaceAll(ns, "/", "_")+".jsonl"), st); err != nil {
			return 0, err
		}
	}
	return len(split), nil
}

func writeStream(path string, inputs []fact.Input) error {
	f, err := record.Create(path)
	if err != nil {
		return err
	}
	w, err := record.NewWriter(f)
	if err != nil {
		f.Close()
		return err
	}
	for _, in := range inputs {
		if err := w.Write(in); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
