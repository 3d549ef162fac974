package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestHealth() (*Health, *fakeClock) {
	clk := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return NewHealth(HealthOptions{StaleAfter: 30 * time.Second, Now: clk.Now, Logger: discard}), clk
}

func get(t *testing.T, h http.Handler, method, path string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, path, nil))
	return w.Code, w.Body.String()
}

func TestReadyz(t *testing.T) {
	tests := []struct {
		name     string
		set      func(h *Health)
		wantCode int
		wantBody string
	}{
		{
			name:     "starting",
			set:      func(*Health) {},
			wantCode: http.StatusServiceUnavailable,
			wantBody: "not ready\nkernel: down (required): starting\nruntime: down (optional): starting\napiserver: down (optional): starting\n",
		},
		{
			name: "ready",
			set: func(h *Health) {
				h.SetReady(SourceKernel, true, "")
				h.SetReady(SourceRuntime, true, "containerd 2.1")
				h.SetReady(SourceAPIServer, true, "")
			},
			wantCode: http.StatusOK,
			wantBody: "ready\nkernel: ok\nruntime: ok: containerd 2.1\napiserver: ok\n",
		},
		{
			name: "degraded",
			set: func(h *Health) {
				h.SetReady(SourceKernel, true, "")
				h.SetReady(SourceRuntime, false, "dial unix /run/containerd/containerd.sock:\n  connect: connection refused")
				h.SetReady(SourceAPIServer, false, "forbidden: RBAC denies list pods")
			},
			wantCode: http.StatusOK,
			wantBody: "ready (degraded: runtime, apiserver)\nkernel: ok\n" +
				"runtime: down (optional): dial unix /run/containerd/containerd.sock: connect: connection refused\n" +
				"apiserver: down (optional): forbidden: RBAC denies list pods\n",
		},
		{
			name: "kernel down",
			set: func(h *Health) {
				h.SetReady(SourceKernel, false, "load BPF programs: operation not permitted")
				h.SetReady(SourceRuntime, true, "")
				h.SetReady(SourceAPIServer, true, "")
			},
			wantCode: http.StatusServiceUnavailable,
			wantBody: "not ready\nkernel: down (required): load BPF programs: operation not permitted\nruntime: ok\napiserver: ok\n",
		},
		{
			name: "extra component",
			set: func(h *Health) {
				h.SetReady(SourceKernel, true, "")
				h.SetReady(SourceRuntime, true, "")
				h.SetReady(SourceAPIServer, true, "")
				h.SetReady("otlp", false, "export: deadline exceeded")
			},
			wantCode: http.StatusOK,
			wantBody: "ready (degraded: otlp)\nkernel: ok\nruntime: ok\napiserver: ok\notlp: down (optional): export: deadline exceeded\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newTestHealth()
			tt.set(h)
			w := httptest.NewRecorder()
			h.ReadyzHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if w.Code != tt.wantCode || w.Body.String() != tt.wantBody {
				t.Errorf("got %d %q\nwant %d %q", w.Code, w.Body.String(), tt.wantCode, tt.wantBody)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/plain; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

func TestHealthzHeartbeat(t *testing.T) {
	h, clk := newTestHealth()
	check := func(wantCode int, wantBody string) {
		t.Helper()
		code, body := get(t, h.HealthzHandler(), http.MethodGet, "/healthz")
		if code != wantCode || body != wantBody {
			t.Errorf("got %d %q, want %d %q", code, body, wantCode, wantBody)
		}
	}
	check(http.StatusOK, "ok: last heartbeat 0s ago\n")
	// Never beating: stale once StaleAfter has passed since start.
	clk.Advance(30 * time.Second)
	check(http.StatusOK, "ok: last heartbeat 30s ago\n")
	clk.Advance(time.Millisecond)
	check(http.StatusInternalServerError, "heartbeat stale: last 30.001s ago, limit 30s\n")
	h.Beat()
	clk.Advance(1500 * time.Millisecond)
	check(http.StatusOK, "ok: last heartbeat 1.5s ago\n")
	clk.Advance(time.Minute)
	check(http.StatusInternalServerError, "heartbeat stale: last 1m1.5s ago, limit 30s\n")
	// Liveness does not depend on readiness.
	h.Beat()
	h.SetReady(SourceKernel, false, "gone")
	check(http.StatusOK, "ok: last heartbeat 0s ago\n")
}

func TestHealthDefaults(t *testing.T) {
	h := NewHealth(HealthOptions{})
	if ok, _ := h.Alive(); !ok {
		t.Error("a new Health is not alive")
	}
	if h.staleAfter != DefaultStaleAfter {
		t.Errorf("staleAfter %v, want %v", h.staleAfter, DefaultStaleAfter)
	}
	if ready, comps := h.Status(); ready || len(comps) != 3 {
		t.Errorf("Status() = %v, %v; want not ready, 3 components", ready, comps)
	}
}

// The endpoints through the Server's mux: methods and unknown paths.
func TestServerRoutes(t *testing.T) {
	reg, h := fixture(t)
	srv := NewServer(reg, h, discard).Handler()
	for _, tt := range []struct {
		method, path string
		want         int
		body         string
	}{
		{http.MethodGet, "/healthz", http.StatusOK, "ok"},
		{http.MethodHead, "/healthz", http.StatusOK, ""},
		{http.MethodGet, "/readyz", http.StatusOK, "ready (degraded: runtime)"},
		{http.MethodHead, "/readyz", http.StatusOK, ""},
		{http.MethodPost, "/readyz", http.StatusMethodNotAllowed, ""},
		{http.MethodGet, "/metrics", http.StatusOK, "podchron_build_info"},
		{http.MethodGet, "/", http.StatusOK, "/metrics"},
		{http.MethodGet, "/nope", http.StatusNotFound, ""},
	} {
		code, body := get(t, srv, tt.method, tt.path)
		if code != tt.want || !strings.Contains(body, tt.body) {
			t.Errorf("%s %s: %d %q, want %d containing %q", tt.method, tt.path, code, body, tt.want, tt.body)
		}
	}
}
