// Package scale measures what one tracer's API side (internal/watcher, no
// BPF) costs as the cluster grows: a real kube-apiserver v1.35.4 and etcd,
// kwok simulating nodes and their pods' status, a driver binding and
// churning pods and writing their scheduler and kubelet events, and a few
// tracer watchers, each in its own process for one node. See README.md.
// Run with `make scale` (SCALE_SHORT=1 for the CI-sized run).
package scale

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestMain(m *testing.M) {
	if node := os.Getenv(agentEnv); node != "" {
		os.Exit(runAgent(node))
	}
	os.Exit(m.Run())
}

type params struct {
	binDir, kwok string
	nodes        []int
	podsPerNode  int
	tracers      int
	window       time.Duration
	churn        float64 // replacements per node per minute
	assert       bool
}

func getParams(t *testing.T) params {
	if os.Getenv("PODCHRON_SCALE") != "1" {
		t.Skip("scale test: run with `make scale` (PODCHRON_SCALE=1)")
	}
	if os.Geteuid() != 0 {
		t.Skip("scale test needs root (etcd, ports)")
	}
	binDir, kwok := binaries(t)
	short := os.Getenv("PODCHRON_SCALE_SHORT") == "1"
	p := params{
		binDir: binDir, kwok: kwok,
		nodes: []int{100, 500}, podsPerNode: 20, tracers: 3,
		window: 2 * time.Minute, churn: 2, assert: os.Getenv("PODCHRON_SCALE_NOASSERT") != "1",
	}
	if short {
		p.nodes, p.window, p.churn = []int{25, 125}, 45*time.Second, 4
	}
	if v := os.Getenv("PODCHRON_SCALE_NODES"); v != "" {
		p.nodes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 3 {
				t.Fatalf("PODCHRON_SCALE_NODES=%q: want a list of node counts >= 3", v)
			}
			p.nodes = append(p.nodes, n)
		}
	}
	if v := os.Getenv("PODCHRON_SCALE_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PODCHRON_SCALE_WINDOW: %v", err)
		}
		p.window = d
	}
	if v := os.Getenv("PODCHRON_SCALE_CHURN"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			t.Fatalf("PODCHRON_SCALE_CHURN=%q", v)
		}
		p.churn = f
	}
	return p
}

func env(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// row is one tracer's measurement at one cluster size.
type row struct {
	nodes int
	init  agentStats // once synced
	end   agentStats // after the churn window
	// per minute of churn, from the counters' difference
	watchEventsPerMin, bodyKiBPerMin, wireKiBPerMin, requestsPerMin float64
}

type apiEgress struct {
	nodes                   int
	watchEventsPerMin       float64 // events-resource watch events sent, all tracers
	watchKiBPerMin          float64
	listKiB                 float64 // events-resource LIST responses during sync+window
	podsTotal, eventsStored int
}

func TestScale(t *testing.T) {
	p := getParams(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dir, err := os.MkdirTemp("", "podchron-scale-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	t0 := time.Now()
	cp, cs, d := startCluster(ctx, t, log, scalePorts, "etcd", p.binDir, p.kwok, dir, p.podsPerNode)
	defer cp.close()

	var rows []row
	var egress []apiEgress
	for _, n := range p.nodes {
		ts := time.Now()
		if err := d.grow(ctx, n, 16); err != nil {
			t.Fatalf("growing to %d nodes: %v", n, err)
		}
		if err := waitRunning(ctx, cs, cp); err != nil {
			t.Fatal(err)
		}
		log.Info("cluster grown", "nodes", n, "pods", d.created.Load()-d.deleted.Load(), "events", d.events.Load(),
			"took", time.Since(ts).Round(time.Second))

		m0, err := cp.metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		agents := make([]*agent, p.tracers)
		for i := range agents {
			a, err := startAgent(cp.kubeconfig, nodeName(i), filepath.Join(dir, "logs", fmt.Sprintf("agent-%d-%s.log", n, nodeName(i))))
			if err != nil {
				t.Fatal(err)
			}
			agents[i] = a
		}
		inits := make([]agentStats, len(agents))
		for i, a := range agents {
			st, err := a.waitReady(3 * time.Minute)
			if err != nil {
				t.Fatalf("tracer %s: %v", a.node, err)
			}
			inits[i] = st
		}
		m1, err := cp.metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cctx, stopChurn := context.WithCancel(ctx)
		churnDone := make(chan struct{})
		go func() { d.churn(cctx, p.churn, 8); close(churnDone) }()
		start := time.Now()
		select {
		case <-time.After(p.window):
		case <-ctx.Done():
		}
		ends := make([]agentStats, len(agents))
		for i, a := range agents {
			st, err := a.stats()
			if err != nil {
				t.Fatalf("tracer %s: %v", a.node, err)
			}
			ends[i] = st
		}
		mins := time.Since(start).Minutes()
		m2, err := cp.metrics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stopChurn()
		<-churnDone
		for i, a := range agents {
			a.stop()
			rows = append(rows, row{
				nodes: n, init: inits[i], end: ends[i],
				watchEventsPerMin: float64(ends[i].WatchEvents-inits[i].WatchEvents) / mins,
				bodyKiBPerMin:     float64(ends[i].BodyBytes-inits[i].BodyBytes) / 1024 / mins,
				wireKiBPerMin:     float64(ends[i].WireBytes-inits[i].WireBytes) / 1024 / mins,
				requestsPerMin:    float64(ends[i].Requests-inits[i].Requests) / mins,
			})
		}
		eg := apiEgress{nodes: n,
			watchEventsPerMin: (metricSum(m2, "apiserver_watch_events_total", `resource="events"`) - metricSum(m1, "apiserver_watch_events_total", `resource="events"`)) / mins,
			watchKiBPerMin:    (metricSum(m2, "apiserver_watch_events_sizes_sum", `resource="events"`) - metricSum(m1, "apiserver_watch_events_sizes_sum", `resource="events"`)) / 1024 / mins,
			listKiB:           (metricSum(m2, "apiserver_response_sizes_sum", `resource="events"`, `verb="LIST"`) - metricSum(m0, "apiserver_response_sizes_sum", `resource="events"`, `verb="LIST"`)) / 1024,
		}
		eg.podsTotal = int(d.created.Load() - d.deleted.Load())
		eg.eventsStored = int(d.events.Load())
		egress = append(egress, eg)
		log.Info("measured", "nodes", n, "driver_errors", d.errors.Load(), "took", time.Since(ts).Round(time.Second))
	}

	table := formatTable(p, rows, egress)
	fmt.Println(table)
	t.Log("\n" + table)
	if out := os.Getenv("PODCHRON_SCALE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
	if d.errors.Load() > 0 {
		t.Logf("driver: %d API errors", d.errors.Load())
	}
	for _, r := range rows {
		if r.end.ForeignEventInputs != 0 {
			t.Errorf("%d nodes, tracer %s: %d events about pods not on its node reached the model", r.nodes, r.end.Node, r.end.ForeignEventInputs)
		}
	}
	if p.assert {
		assertFlat(t, p, rows)
	}
	t.Logf("total %s", time.Since(t0).Round(time.Second))
}

// assertFlat fails when a tracer's cost grows with the cluster: between
// the smallest and the largest cluster, the objects it caches, its steady
// traffic and its heap must stay within noise.
func assertFlat(t *testing.T, p params, rows []row) {
	small, large := p.nodes[0], p.nodes[len(p.nodes)-1]
	if large < 2*small {
		return
	}
	by := map[int][]row{}
	for _, r := range rows {
		by[r.nodes] = append(by[r.nodes], r)
	}
	for i := range by[small] {
		a, b := by[small][i], by[large][i]
		ratio := func(x, y float64, slack float64) bool { return y <= 1.5*x+slack }
		if !ratio(float64(a.end.Watcher.EventsCached), float64(b.end.Watcher.EventsCached), 50) {
			t.Errorf("tracer %s caches %d events at %d nodes, %d at %d nodes", a.end.Node, a.end.Watcher.EventsCached, small, b.end.Watcher.EventsCached, large)
		}
		if !ratio(float64(a.init.ListItems+a.end.WatchEvents), float64(b.init.ListItems+b.end.WatchEvents), 200) {
			t.Errorf("tracer %s received %d objects at %d nodes, %d at %d nodes", a.end.Node,
				a.init.ListItems+a.end.WatchEvents, small, b.init.ListItems+b.end.WatchEvents, large)
		}
		if !ratio(a.bodyKiBPerMin, b.bodyKiBPerMin, 64) {
			t.Errorf("tracer %s receives %.0f KiB/min at %d nodes, %.0f at %d nodes", a.end.Node, a.bodyKiBPerMin, small, b.bodyKiBPerMin, large)
		}
		if !ratio(float64(a.end.HeapBytes), float64(b.end.HeapBytes), 4<<20) {
			t.Errorf("tracer %s heap %.1f MiB at %d nodes, %.1f MiB at %d nodes", a.end.Node, mib(a.end.HeapBytes), small, mib(b.end.HeapBytes), large)
		}
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func formatTable(p params, rows []row, eg []apiEgress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "podchron scale: %d pods/node, churn %.1f pods/node/min, window %s, %d tracers\n\n",
		p.podsPerNode, p.churn, p.window, p.tracers)
	fmt.Fprintf(&b, "| nodes | tracer | heap MiB (synced → end) | pods cached | events cached | event watches | sync: objects / KiB | churn: objects/min | churn: KiB/min (body / wire) | churn: requests/min | events to model |\n")
	fmt.Fprintf(&b, "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %.1f → %.1f | %d | %d | %d | %d / %.0f | %.0f | %.0f / %.0f | %.1f | %d |\n",
			r.nodes, r.end.Node, mib(r.init.HeapBytes), mib(r.end.HeapBytes), r.end.Watcher.PodsCached,
			r.end.Watcher.EventsCached, r.end.Watcher.EventWatches, r.init.ListItems+r.init.WatchEvents,
			float64(r.init.BodyBytes)/1024, r.watchEventsPerMin, r.bodyKiBPerMin, r.wireKiBPerMin, r.requestsPerMin, r.end.EventInputs)
	}
	fmt.Fprintf(&b, "\nAPI server, events resource, all %d tracers together:\n\n", p.tracers)
	fmt.Fprintf(&b, "| nodes | pods | events written | watch events sent/min | watch KiB/min | LIST KiB (sync + window) |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, e := range eg {
		fmt.Fprintf(&b, "| %d | %d | %d | %.0f | %.0f | %.0f |\n", e.nodes, e.podsTotal, e.eventsStored, e.watchEventsPerMin, e.watchKiBPerMin, e.listKiB)
	}
	return b.String()
}

// metricSum adds the samples of a metric whose labels contain all of want.
func metricSum(text, name string, want ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, w := range want {
			if !strings.Contains(line, w) {
				ok = false
			}
		}
		if !ok {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// waitRunning waits until kwok has made every pod Running.
func waitRunning(ctx context.Context, cs kubernetes.Interface, cp *controlPlane) error {
	return cp.waitFor(ctx, "pods Running", 10*time.Minute, func() error {
		l, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Running", Limit: 1})
		if err != nil {
			return err
		}
		if len(l.Items) > 0 {
			return fmt.Errorf("pod %s/%s is %s", l.Items[0].Namespace, l.Items[0].Name, l.Items[0].Status.Phase)
		}
		return nil
	})
}

// agent is a running tracer watcher process (see runAgent).
type agent struct {
	node string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	logf *os.File
}

func startAgent(kubeconfig, node, logPath string) (*agent, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), agentEnv+"="+node, "KUBECONFIG="+kubeconfig)
	cmd.Stderr = lf
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(outp)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &agent{node: node, cmd: cmd, in: in, out: sc, logf: lf}, nil
}

func (a *agent) stats() (agentStats, error) {
	var st agentStats
	if _, err := io.WriteString(a.in, "stats\n"); err != nil {
		return st, err
	}
	if !a.out.Scan() {
		return st, fmt.Errorf("agent exited: %w", a.out.Err())
	}
	err := json.Unmarshal(a.out.Bytes(), &st)
	return st, err
}

func (a *agent) waitReady(timeout time.Duration) (agentStats, error) {
	deadline := time.Now().Add(timeout)
	for {
		st, err := a.stats()
		if err != nil || st.Ready {
			return st, err
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("not ready after %s", timeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (a *agent) stop() {
	_, _ = io.WriteString(a.in, "quit\n")
	done := make(chan struct{})
	go func() { _ = a.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = a.cmd.Process.Kill()
		<-done
	}
	a.logf.Close()
}

// startCluster starts the control plane (the caller closes it) and a
// driver with its namespaces, on an admin client made for the driver's pace.
func startCluster(ctx context.Context, t *testing.T, log *slog.Logger, pp ports, etcd, binDir, kwok, dir string, podsPerNode int) (*controlPlane, kubernetes.Interface, *driver) {
	t.Helper()
	t0 := time.Now()
	cp, err := startControlPlane(ctx, log, pp, etcd, binDir, kwok, dir)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("control plane up", "took", time.Since(t0).Round(time.Millisecond))
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 400, 800
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := newDriver(cs, podsPerNode, 10)
	if err := d.setupNamespaces(ctx); err != nil {
		cp.close()
		t.Fatal(err)
	}
	return cp, cs, d
}
