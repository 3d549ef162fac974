// Command demo shows podtrace on a machine without Kubernetes: it starts a
// private containerd (with real runc and CNI plugins), runs the tracer
// against it, and drives pods through CRI the way a kubelet would: a graceful
// stop, a container that ignores SIGTERM, an OOM kill, a crash loop with
// back-off, and a kill from inside a pod. The tracer prints one timeline per
// pod. Needs root.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/podtrace/podtrace/test/harness/containerd"
)

func main() {
	tracer := flag.String("tracer", "bin/tracer", "path to the tracer binary")
	output := flag.String("output", "text", "tracer output: text or json")
	record := flag.String("record", "", "also record the tracer's input stream to this file")
	flag.Parse()
	if err := run(*tracer, *output, *record); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(tracerBin, output, recordPath string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (containerd, BPF)")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fmt.Fprintln(os.Stderr, "demo: starting a private containerd ...")
	h, err := containerd.New(ctx, containerd.Config{Logger: log, LogLevel: "warn"})
	if err != nil {
		return err
	}
	defer func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		if err := h.Close(cctx); err != nil {
			fmt.Fprintln(os.Stderr, "demo: cleanup:", err)
		}
	}()

	args := []string{"--cgroup-root", h.CgroupRoot, "--runtime-endpoint", h.Endpoint, "--no-api",
		"--metrics-addr", "127.0.0.1:9464", "--output", output, "--log-level", "info"}
	if recordPath != "" {
		args = append([]string{"record", recordPath}, args...)
	}
	tr := exec.Command(tracerBin, args...)
	tr.Stdout = os.Stdout
	stderr, err := tr.StderrPipe()
	if err != nil {
		return err
	}
	if err := tr.Start(); err != nil {
		return fmt.Errorf("start tracer: %w", err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			line := sc.Text()
			if !strings.Contains(line, "level=INFO") || strings.Contains(line, "probes attached") {
				fmt.Fprintln(os.Stderr, line)
			}
			if !once && strings.Contains(line, "probes attached") {
				once = true
				close(ready)
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		_ = tr.Process.Kill()
		return errors.New("tracer did not become ready")
	}
	fmt.Fprintln(os.Stderr, "demo: tracer ready; metrics on http://127.0.0.1:9464/metrics")

	scenarios := []struct {
		name string
		fn   func(context.Context, *containerd.Harness) error
	}{
		{"graceful stop", graceful},
		{"SIGTERM ignored, SIGKILL at the end of the grace period", stubborn},
		{"OOM kill", oom},
		{"crash loop with back-off", crashloop},
		{"kill -9 1 from inside the container (ignored: PID 1 of its namespace)", inPodKill},
	}
	for _, s := range scenarios {
		fmt.Fprintf(os.Stderr, "demo: scenario: %s\n", s.name)
		if err := s.fn(ctx, h); err != nil {
			fmt.Fprintf(os.Stderr, "demo: %s: %v\n", s.name, err)
		}
		time.Sleep(2500 * time.Millisecond) // let the tracer settle and print
	}
	_ = tr.Process.Signal(syscall.SIGINT)
	return tr.Wait()
}

func pod(ctx context.Context, h *containerd.Harness, name string) (*containerd.Pod, error) {
	return h.RunPodSandbox(ctx, containerd.PodSpec{Name: name, Namespace: "demo"})
}

func graceful(ctx context.Context, h *containerd.Harness) error {
	p, err := pod(ctx, h, "web")
	if err != nil {
		return err
	}
	id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "server",
		Command: []string{"sh", "-c", "trap 'echo bye; exit 0' TERM; while :; do sleep 0.2; done"}})
	if err != nil {
		return err
	}
	time.Sleep(1500 * time.Millisecond)
	if err := h.StopContainer(ctx, id, 30*time.Second); err != nil {
		return err
	}
	return h.TeardownPod(ctx, p.ID, 0)
}

func stubborn(ctx context.Context, h *containerd.Harness) error {
	p, err := pod(ctx, h, "stubborn")
	if err != nil {
		return err
	}
	id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "app", Command: []string{"sleep", "1000"}})
	if err != nil {
		return err
	}
	time.Sleep(1500 * time.Millisecond)
	if err := h.StopContainer(ctx, id, 3*time.Second); err != nil {
		return err
	}
	return h.TeardownPod(ctx, p.ID, 0)
}

func oom(ctx context.Context, h *containerd.Harness) error {
	p, err := pod(ctx, h, "hungry")
	if err != nil {
		return err
	}
	id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "eater", MemoryLimitBytes: 32 << 20,
		Command: []string{"sh", "-c", "sleep 1; dd if=/dev/zero of=/dev/null bs=256M count=1"}})
	if err != nil {
		return err
	}
	if _, err := h.WaitExited(ctx, id); err != nil {
		return err
	}
	time.Sleep(1500 * time.Millisecond)
	return h.TeardownPod(ctx, p.ID, 0)
}

// crashloop restarts a failing container with a growing delay, as the
// kubelet's back-off does (10 s, 20 s, ... there; 1 s, 2 s here).
func crashloop(ctx context.Context, h *containerd.Harness) error {
	p, err := pod(ctx, h, "crasher")
	if err != nil {
		return err
	}
	backoff := time.Second
	for attempt := uint32(0); attempt < 3; attempt++ {
		id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "app", Attempt: attempt,
			Command: []string{"sh", "-c", "echo starting; sleep 0.3; exit 1"}})
		if err != nil {
			return err
		}
		if _, err := h.WaitExited(ctx, id); err != nil {
			return err
		}
		if attempt < 2 {
			time.Sleep(backoff)
			backoff *= 2
		}
	}
	time.Sleep(1500 * time.Millisecond)
	return h.TeardownPod(ctx, p.ID, 0)
}

func inPodKill(ctx context.Context, h *containerd.Harness) error {
	p, err := pod(ctx, h, "victim")
	if err != nil {
		return err
	}
	id, err := h.RunContainer(ctx, p, containerd.ContainerSpec{Name: "app",
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"}})
	if err != nil {
		return err
	}
	time.Sleep(1500 * time.Millisecond)
	// PID 1 of a pid namespace cannot be killed from inside it: the tracer
	// shows the SIGKILL generated, by whom, and ignored.
	if _, err := h.ExecSync(ctx, id, []string{"kill", "-9", "1"}, 10*time.Second); err != nil {
		return err
	}
	time.Sleep(time.Second)
	if err := h.StopContainer(ctx, id, 10*time.Second); err != nil {
		return err
	}
	return h.TeardownPod(ctx, p.ID, 0)
}
