package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// DefaultShutdownTimeout bounds how long Serve waits for in-flight requests
// once its context is cancelled.
const DefaultShutdownTimeout = 5 * time.Second

// Server serves /metrics (the registry, in the Prometheus text format or
// OpenMetrics when the scraper asks for it), /healthz and /readyz.
type Server struct {
	handler http.Handler
	log     *slog.Logger
	// ShutdownTimeout bounds the graceful shutdown (default
	// DefaultShutdownTimeout); past it connections are closed.
	ShutdownTimeout time.Duration
}

// NewServer serves reg's metrics and h's health. It registers
// promhttp_metric_handler_errors_total on reg. A nil log uses
// slog.Default().
func NewServer(reg *prometheus.Registry, h *Health, log *slog.Logger) *Server {
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// One failing collector must not blank the whole scrape.
		ErrorHandling:     promhttp.ContinueOnError,
		Registry:          reg,
		EnableOpenMetrics: true,
		// A scrape never needs many concurrent handlers on one node.
		MaxRequestsInFlight: 4,
	}))
	mux.Handle("GET /healthz", h.HealthzHandler())
	mux.Handle("GET /readyz", h.ReadyzHandler())
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		writePlain(w, http.StatusOK, "podchron\n/metrics\n/healthz\n/readyz\n")
	})
	return &Server{handler: mux, log: log, ShutdownTimeout: DefaultShutdownTimeout}
}

// Handler is the server's handler, for tests and for mounting elsewhere.
func (s *Server) Handler() http.Handler { return s.handler }

// Listen takes the metrics address, so that a busy port fails the tracer
// before it starts anything else. An address already in use is reported as
// such (errors.Is syscall.EADDRINUSE).
func Listen(addr string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("metrics server: address %s is already in use (another podchron on this node, or another process on that port? pick another --metrics-addr): %w", addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics server: listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve serves on ln (closing it) until ctx is cancelled, then shuts down
// gracefully and returns nil; it returns an error if serving fails.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.log.Info("metrics server listening", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		return fmt.Errorf("metrics server on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	timeout := s.ShutdownTimeout
	if timeout <= 0 {
		timeout = DefaultShutdownTimeout
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc // Serve has returned http.ErrServerClosed: no goroutine left behind
	if err != nil {
		srv.Close()
		return fmt.Errorf("metrics server shutdown: %w", err)
	}
	s.log.Info("metrics server stopped", "addr", ln.Addr().String())
	return nil
}
