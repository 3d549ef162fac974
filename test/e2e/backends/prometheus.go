package backends

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/podchron/podchron/test/e2e/proc"
)

// Prometheus is a running Prometheus server.
type Prometheus struct {
	p   *proc.Process
	URL string
}

// PrometheusConfig says what to scrape and which rule files to load.
type PrometheusConfig struct {
	// Port on 127.0.0.1 (default 19090).
	Port int
	// Targets of job "podchron" (host:port), scraped with honor_labels as
	// deploy/README.md asks.
	Targets []string
	// RuleFiles are loaded as they are (deploy/rules/podchron.rules.yml).
	RuleFiles []string
	// Interval is the scrape and rule evaluation interval (default 2s).
	Interval time.Duration
}

// StartPrometheus starts Debian's prometheus binary.
func StartPrometheus(ctx context.Context, log *slog.Logger, dir string, cfg PrometheusConfig) (*Prometheus, error) {
	if cfg.Port == 0 {
		cfg.Port = 19090
	}
	if cfg.Interval == 0 {
		cfg.Interval = 2 * time.Second
	}
	var targets, rules []string
	for _, t := range cfg.Targets {
		targets = append(targets, strconv.Quote(t))
	}
	for _, r := range cfg.RuleFiles {
		abs, err := filepath.Abs(r)
		if err != nil {
			return nil, err
		}
		rules = append(rules, strconv.Quote(abs))
	}
	conf := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
rule_files: [%[2]s]
scrape_configs:
  - job_name: podchron
    honor_labels: true
    static_configs:
      - targets: [%[3]s]
`, cfg.Interval, strings.Join(rules, ", "), strings.Join(targets, ", "))
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		return nil, fmt.Errorf("prometheus config: %w", err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", cfg.Port)
	p, err := proc.Start(log, "prometheus", filepath.Join(dir, "prometheus.log"), "prometheus",
		"--config.file="+path, "--web.listen-address="+addr,
		"--storage.tsdb.path="+filepath.Join(dir, "prometheus-data"))
	if err != nil {
		return nil, err
	}
	pr := &Prometheus{p: p, URL: "http://" + addr}
	if err := waitHTTP(ctx, p, pr.URL+"/-/ready", 60*time.Second); err != nil {
		_ = p.Stop(stopGrace)
		return nil, err
	}
	return pr, nil
}

// Close stops Prometheus.
func (pr *Prometheus) Close() error { return pr.p.Stop(stopGrace) }

// Log returns the tail of Prometheus's log.
func (pr *Prometheus) Log(n int) string { return pr.p.LogTail(n) }

// Sample is one element of an instant vector.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// requestTimeout bounds one query to Prometheus.
const requestTimeout = 10 * time.Second

// api is Prometheus's HTTP API through client_golang's client.
func (pr *Prometheus) api() (promv1.API, error) {
	c, err := promapi.NewClient(promapi.Config{Address: pr.URL})
	if err != nil {
		return nil, fmt.Errorf("prometheus client: %w", err)
	}
	return promv1.NewAPI(c), nil
}

// Query runs an instant PromQL query (a vector, or a scalar as one sample
// without labels).
func (pr *Prometheus) Query(ctx context.Context, q string) ([]Sample, error) {
	api, err := pr.api()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	v, _, _, err := api.Query(ctx, q, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", q, err)
	}
	switch r := v.(type) {
	case model.Vector:
		out := make([]Sample, 0, len(r))
		for _, s := range r {
			labels := make(map[string]string, len(s.Metric))
			for k, v := range s.Metric {
				labels[string(k)] = string(v)
			}
			out = append(out, Sample{Labels: labels, Value: float64(s.Value)})
		}
		return out, nil
	case *model.Scalar:
		return []Sample{{Labels: map[string]string{}, Value: float64(r.Value)}}, nil
	}
	return nil, fmt.Errorf("query %q: a %s, want a vector", q, v.Type())
}

// Alert is an alert as /api/v1/alerts reports it.
type Alert struct {
	Name     string
	State    string // pending, firing
	Labels   map[string]string
	ActiveAt time.Time
}

// Alerts lists the pending and firing alerts.
func (pr *Prometheus) Alerts(ctx context.Context) ([]Alert, error) {
	api, err := pr.api()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	res, err := api.Alerts(ctx)
	if err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	var out []Alert
	for _, a := range res.Alerts {
		labels := make(map[string]string, len(a.Labels))
		for k, v := range a.Labels {
			labels[string(k)] = string(v)
		}
		out = append(out, Alert{Name: labels["alertname"], State: string(a.State), Labels: labels, ActiveAt: a.ActiveAt})
	}
	return out, nil
}

// Target is a scrape target's health.
type Target struct {
	ScrapeURL string
	Health    string
	LastError string
}

// Targets lists the active scrape targets.
func (pr *Prometheus) Targets(ctx context.Context) ([]Target, error) {
	api, err := pr.api()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	res, err := api.Targets(ctx)
	if err != nil {
		return nil, fmt.Errorf("targets: %w", err)
	}
	var out []Target
	for _, t := range res.Active {
		out = append(out, Target{ScrapeURL: t.ScrapeURL, Health: string(t.Health), LastError: t.LastError})
	}
	return out, nil
}

// RuleNames returns the names of the loaded rules.
func (pr *Prometheus) RuleNames(ctx context.Context) ([]string, error) {
	api, err := pr.api()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	res, err := api.Rules(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	var out []string
	for _, g := range res.Groups {
		for _, r := range g.Rules {
			switch r := r.(type) {
			case promv1.AlertingRule:
				out = append(out, r.Name)
			case promv1.RecordingRule:
				out = append(out, r.Name)
			}
		}
	}
	return out, nil
}
