package backends

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

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

// Query runs an instant PromQL query.
func (pr *Prometheus) Query(ctx context.Context, q string) ([]Sample, error) {
	var resp struct {
		Status string `json:"status"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(ctx, pr.URL+"/api/v1/query?query="+url.QueryEscape(q), &resp); err != nil {
		return nil, err
	}
	var out []Sample
	for _, r := range resp.Data.Result {
		v, err := strconv.ParseFloat(fmt.Sprint(r.Value[1]), 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", q, r.Value[1], err)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
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
	var resp struct {
		Data struct {
			Alerts []struct {
				Labels   map[string]string `json:"labels"`
				State    string            `json:"state"`
				ActiveAt time.Time         `json:"activeAt"`
			} `json:"alerts"`
		} `json:"data"`
	}
	if err := getJSON(ctx, pr.URL+"/api/v1/alerts", &resp); err != nil {
		return nil, err
	}
	var out []Alert
	for _, a := range resp.Data.Alerts {
		out = append(out, Alert{Name: a.Labels["alertname"], State: a.State, Labels: a.Labels, ActiveAt: a.ActiveAt})
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
	var resp struct {
		Data struct {
			ActiveTargets []struct {
				ScrapeURL string `json:"scrapeUrl"`
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := getJSON(ctx, pr.URL+"/api/v1/targets", &resp); err != nil {
		return nil, err
	}
	var out []Target
	for _, t := range resp.Data.ActiveTargets {
		out = append(out, Target{ScrapeURL: t.ScrapeURL, Health: t.Health, LastError: t.LastError})
	}
	return out, nil
}

// RuleNames returns the names of the loaded rules.
func (pr *Prometheus) RuleNames(ctx context.Context) ([]string, error) {
	var resp struct {
		Data struct {
			Groups []struct {
				Rules []struct {
					Name string `json:"name"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"data"`
	}
	if err := getJSON(ctx, pr.URL+"/api/v1/rules", &resp); err != nil {
		return nil, err
	}
	var out []string
	for _, g := range resp.Data.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Name)
		}
	}
	return out, nil
}
