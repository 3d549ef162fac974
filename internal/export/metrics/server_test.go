package metrics

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// blockingCollector holds a scrape until released.
type blockingCollector struct {
	started chan struct{}
	release chan struct{}
}

var blockingDesc = prometheus.NewDesc("podchron_test_blocking", "test", nil, nil)

func (c *blockingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- blockingDesc }
func (c *blockingCollector) Collect(ch chan<- prometheus.Metric) {
	close(c.started)
	<-c.release
	ch <- prometheus.MustNewConstMetric(blockingDesc, prometheus.GaugeValue, 1)
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func httpGet(url string) (int, string, error) {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func TestServerServeAndShutdown(t *testing.T) {
	reg, h := fixture(t)
	ln := listen(t)
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(reg, h, discard).Serve(ctx, ln) }()

	code, body, err := httpGet(base + "/metrics")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "podchron_probe_up 1") {
		t.Fatalf("GET /metrics: %d %v\n%s", code, err, body)
	}
	code, body, err = httpGet(base + "/readyz")
	if err != nil || code != http.StatusOK || !strings.HasPrefix(body, "ready (degraded: runtime)") {
		t.Fatalf("GET /readyz: %d %v %q", code, err, body)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after ctx was cancelled")
	}
	if _, _, err := httpGet(base + "/healthz"); err == nil {
		t.Error("the server still answers after shutdown")
	}
}

// An in-flight scrape finishes before Run returns.
func TestServerGracefulShutdown(t *testing.T) {
	bc := &blockingCollector{started: make(chan struct{}), release: make(chan struct{})}
	reg, err := NewRegistry(bc)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newTestHealth()
	ln := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(reg, h, discard).Serve(ctx, ln) }()

	type result struct {
		code int
		body string
		err  error
	}
	scraped := make(chan result, 1)
	go func() {
		code, body, err := httpGet("http://" + ln.Addr().String() + "/metrics")
		scraped <- result{code, body, err}
	}()
	<-bc.started
	cancel()
	select {
	case err := <-done:
		t.Fatalf("Serve returned (%v) with a scrape in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(bc.release)
	r := <-scraped
	if r.err != nil || r.code != http.StatusOK || !strings.Contains(r.body, "podchron_test_blocking 1") {
		t.Errorf("in-flight scrape: %d %v %q", r.code, r.err, r.body)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestServerShutdownTimeout(t *testing.T) {
	bc := &blockingCollector{started: make(chan struct{}), release: make(chan struct{})}
	defer close(bc.release)
	reg, err := NewRegistry(bc)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := newTestHealth()
	ln := listen(t)
	srv := NewServer(reg, h, discard)
	srv.ShutdownTimeout = 50 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	go httpGet("http://" + ln.Addr().String() + "/metrics") //nolint:errcheck
	<-bc.started
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Serve = %v, want a shutdown deadline error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not give up after ShutdownTimeout")
	}
}

func TestServerServeCancel(t *testing.T) {
	reg, h := fixture(t)
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewServer(reg, h, discard).Serve(ctx, ln) }()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve = %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after ctx was cancelled")
	}
}

func TestListenPortInUse(t *testing.T) {
	ln := listen(t)
	defer ln.Close()
	_, err := Listen(ln.Addr().String())
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Listen on a taken port = %v, want EADDRINUSE", err)
	}
	if !strings.Contains(err.Error(), "already in use") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("error does not name the taken address: %v", err)
	}
}

func TestListenBadAddress(t *testing.T) {
	_, err := Listen("not-an-address")
	if err == nil || !strings.Contains(err.Error(), "listen on not-an-address") {
		t.Errorf("Listen(bad address) = %v", err)
	}
}
