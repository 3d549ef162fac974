package scale

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/podchron/podchron/test/e2e/cluster"
	"github.com/podchron/podchron/test/e2e/proc"
)

// ports are a control plane's ports on loopback: etcd's client, peer and
// metrics ports are etcd, etcd+1 and etcd+2.
type ports struct {
	etcd, api, kwok int
}

var (
	// scalePorts are TestScale's, apart from the e2e cluster's (12379..,
	// 16443).
	scalePorts = ports{etcd: 22379, api: 26443, kwok: 26444}
	// fleetPorts are TestFleet's, apart from TestScale's, so that both can
	// run on one machine at once.
	fleetPorts = ports{etcd: 23379, api: 27443, kwok: 27444}
)

func (p ports) etcdURL(off int) string { return fmt.Sprintf("http://127.0.0.1:%d", p.etcd+off) }

// controlPlane is etcd (Debian's etcd-server) and kube-apiserver v1.35.4
// (test/e2e/tools/build.sh's default stack), with kwok simulating the nodes and their pods'
// status. No controller-manager, scheduler or kubelet: the driver binds
// pods itself (spec.nodeName) and writes the kubelet's events.
type controlPlane struct {
	dir        string
	log        *slog.Logger
	procs      []*proc.Process
	server     string
	kubeconfig string
	tls        *tls.Config // admin client TLS, for /metrics
	apiserver  *proc.Process
	port       int // the API server's
}

// etcdBin is etcd's binary (a name on PATH or a path).
func startControlPlane(ctx context.Context, log *slog.Logger, pt ports, etcdBin, binDir, kwokBin, dir string) (_ *controlPlane, retErr error) {
	cp := &controlPlane{dir: dir, log: log, server: fmt.Sprintf("https://127.0.0.1:%d", pt.api), port: pt.api}
	etcdClient, etcdPeer, etcdMetrics := pt.etcdURL(0), pt.etcdURL(1), pt.etcdURL(2)
	defer func() {
		if retErr != nil {
			cp.close()
		}
	}()
	if err := cp.pki(); err != nil {
		return nil, err
	}
	if _, err := cp.start("etcd", etcdBin, "--name=scale", "--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdClient, "--advertise-client-urls="+etcdClient,
		"--listen-peer-urls="+etcdPeer, "--initial-advertise-peer-urls="+etcdPeer,
		"--initial-cluster=scale="+etcdPeer, "--listen-metrics-urls="+etcdMetrics,
		"--quota-backend-bytes=8589934592", "--unsafe-no-fsync", "--log-level=warn"); err != nil {
		return nil, err
	}
	if err := cp.waitFor(ctx, "etcd", 30*time.Second, func() error { return cluster.HTTPOK(ctx, etcdClient+"/health", nil) }); err != nil {
		return nil, err
	}
	p := func(n string) string { return filepath.Join(dir, "pki", n) }
	// PODCHRON_SCALE_APISERVER_ARGS: extra flags, space-separated (make
	// fleet FLEET_APISERVER_ARGS=--watch-cache-sizes=events#1000 measures
	// a cluster that keeps a watch cache for Events).
	extra := strings.Fields(os.Getenv("PODCHRON_SCALE_APISERVER_ARGS"))
	api, err := cp.start("kube-apiserver", filepath.Join(binDir, "kube-apiserver"), append([]string{
		"--etcd-servers=" + etcdClient,
		"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", pt.api), "--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none", "--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--tls-cert-file=" + p("apiserver.crt"), "--tls-private-key-file=" + p("apiserver.key"),
		"--client-ca-file=" + p("ca.crt"),
		"--service-account-key-file=" + p("sa.pub"), "--service-account-signing-key-file=" + p("sa.key"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--max-requests-inflight=1000", "--max-mutating-requests-inflight=500",
		// Profiling only when asked (PODCHRON_SCALE_PPROF: make fleet
		// saves heap profiles there).
		fmt.Sprintf("--profiling=%t", os.Getenv("PODCHRON_SCALE_PPROF") != ""), "--v=1"}, extra...)...)
	if err != nil {
		return nil, err
	}
	cp.apiserver = api
	cert, err := tls.LoadX509KeyPair(p("admin.crt"), p("admin.key"))
	if err != nil {
		return nil, err
	}
	// Our own loopback API server, whose certificate we made.
	cp.tls = &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true} //nolint:gosec
	if err := cp.waitFor(ctx, "kube-apiserver /readyz", 2*time.Minute, func() error {
		return cluster.HTTPOK(ctx, cp.server+"/readyz", cp.tls)
	}); err != nil {
		return nil, err
	}
	// kwok: manages the nodes annotated kwok.x-k8s.io/node=fake and their
	// pods, with its default stages (node ready and heartbeats, pod ready,
	// pod deletion). Its pod and lease workers are raised from 4 to 64
	// and 16: with 4, a pod stayed ~2 min between its creation and Ready
	// (or its deletion and its end) under the fleet's churn, so 2 pods per
	// node were in transition at any time, where a kubelet takes seconds.
	kwokCfg := filepath.Join(cp.dir, "kwok.yaml")
	if err := os.WriteFile(kwokCfg, []byte("apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokConfiguration\noptions:\n  podPlayStageParallelism: 64\n  nodeLeaseParallelism: 16\n"), 0o644); err != nil {
		return nil, err
	}
	if _, err := cp.start("kwok", kwokBin,
		"--kubeconfig="+cp.kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--cidr=10.0.0.1/8", "--node-ip=10.0.0.1",
		fmt.Sprintf("--server-address=127.0.0.1:%d", pt.kwok),
		"--node-lease-duration-seconds=40",
		"--config="+kwokCfg,
	); err != nil {
		return nil, err
	}
	if err := cp.waitFor(ctx, "kwok /healthz", time.Minute, func() error {
		return cluster.HTTPOK(ctx, fmt.Sprintf("http://127.0.0.1:%d/healthz", pt.kwok), nil)
	}); err != nil {
		return nil, err
	}
	return cp, nil
}

func (cp *controlPlane) start(name, bin string, args ...string) (*proc.Process, error) {
	logPath := filepath.Join(cp.dir, "logs", name+".log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	pr, err := proc.Start(cp.log, name, logPath, bin, args...)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, pr)
	return pr, nil
}

// close stops every process it started, by PID, last first.
func (cp *controlPlane) close() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		if err := cp.procs[i].Stop(15 * time.Second); err != nil {
			cp.log.Error("stop", "err", err)
		}
	}
	cp.procs = nil
}

// rss is the resident memory of each process, for the log.
func (cp *controlPlane) rss() string {
	var b strings.Builder
	for _, pr := range cp.procs {
		kb := "?"
		if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pr.PID())); err == nil {
			for _, line := range strings.Split(string(st), "\n") {
				if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
					kb = strings.TrimSpace(v)
				}
			}
		}
		fmt.Fprintf(&b, "%s=%s ", pr.Name, kb)
	}
	return strings.TrimSpace(b.String())
}

func (cp *controlPlane) dead() error {
	var errs []error
	for _, pr := range cp.procs {
		if done, err := pr.Exited(); done {
			errs = append(errs, fmt.Errorf("%s exited (%w); log tail:\n%s", pr.Name, err, pr.LogTail(3000)))
		}
	}
	return errors.Join(errs...)
}

func (cp *controlPlane) waitFor(ctx context.Context, what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		last := check()
		if last == nil {
			return nil
		}
		if err := cp.dead(); err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waiting for %s (%s): %w", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// metrics returns the API server's Prometheus text.
func (cp *controlPlane) metrics(ctx context.Context) (string, error) {
	return cp.get(ctx, "/metrics")
}

// heapProfile writes the API server's heap profile (pprof) to file; the
// API server must run with profiling (PODCHRON_SCALE_PPROF).
func (cp *controlPlane) heapProfile(ctx context.Context, file string) error {
	b, err := cp.get(ctx, "/debug/pprof/heap")
	if err != nil {
		return err
	}
	return os.WriteFile(file, []byte(b), 0o644)
}

// get returns the body of an admin GET of path on the API server.
func (cp *controlPlane) get(ctx context.Context, path string) (string, error) {
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cp.tls}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cp.server+path, nil)
	if err != nil {
		return "", err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return string(b), nil
}

// pki makes the control plane's certificates and admin kubeconfig, as the
// e2e cluster does.
func (cp *controlPlane) pki() error {
	kc, err := cluster.ControlPlanePKI(filepath.Join(cp.dir, "pki"), cp.server)
	cp.kubeconfig = kc
	return err
}
