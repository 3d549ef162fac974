package cri

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	crifact "github.com/podchron/podchron/internal/fact/cri"
)

func TestDialNoRuntime(t *testing.T) {
	dir := t.TempDir()
	_, err := Dial(context.Background(), "", WithCandidates(
		"unix://"+filepath.Join(dir, "containerd.sock"), filepath.Join(dir, "crio.sock")))
	if !errors.Is(err, ErrNoRuntime) {
		t.Fatalf("err = %v, want ErrNoRuntime", err)
	}
	if !strings.Contains(err.Error(), "crio.sock") {
		t.Errorf("error does not name the probed endpoints: %v", err)
	}
}

func TestDialExplicitMissing(t *testing.T) {
	_, err := Dial(context.Background(), "unix:///nonexistent/podchron/cri.sock")
	if !errors.Is(err, ErrUnreachable) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want ErrUnreachable wrapping fs.ErrNotExist", err)
	}
	if _, err := Dial(context.Background(), "tcp://127.0.0.1:1"); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("non-unix endpoint: err = %v", err)
	}
}

func TestDialNotASocket(t *testing.T) {
	p := filepath.Join(t.TempDir(), "file.sock")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Dial(context.Background(), "", WithCandidates(p))
	if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "not a unix socket") {
		t.Fatalf("err = %v", err)
	}
}

// A socket that accepts and hangs up (not a gRPC server) is unreachable,
// and Dial gives up within the connect timeout.
func TestDialNotCRI(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.sock")
	l, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	start := time.Now()
	_, err = Dial(context.Background(), "", WithCandidates(p), WithConnectTimeout(time.Second))
	if !errors.Is(err, ErrUnreachable) {
		t.Fatalf("err = %v, want ErrUnreachable", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Dial took %v", d)
	}
	_ = l.Close()
	<-done
}

// Without any runtime the watcher reports one RuntimeUnavailable, keeps
// retrying, and its goroutine ends (closing the channel) on cancel.
func TestWatchNoRuntime(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var gaps []crifact.Gap
	ch, w := Watch(ctx, WatchConfig{
		Endpoint:   "unix://" + filepath.Join(t.TempDir(), "none.sock"),
		BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
		OnGap: func(g crifact.Gap) { gaps = append(gaps, g) },
	}, 4)
	select {
	case ev := <-ch:
		if ev.Type != crifact.EventRuntimeUnavailable || ev.Gap == nil || !ev.Gap.LastSeen.IsZero() || ev.Gap.Since.IsZero() ||
			!errors.Is(ev.Gap.Err, ErrUnreachable) {
			t.Fatalf("first event = %+v gap %+v", ev, ev.Gap)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no RuntimeUnavailable event")
	}
	select {
	case ev := <-ch:
		t.Fatalf("unexpected second event %v", ev)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Fatal("event after cancel")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("watch goroutine did not stop on cancel")
	}
	if w.Latest() != nil || len(gaps) != 0 {
		t.Errorf("latest=%v gaps=%v", w.Latest(), gaps)
	}
}
