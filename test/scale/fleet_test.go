package scale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/watcher"
)

// TestFleet measures the API server's side of a tracer per node: one
// internal/watcher per simulated node (all of them, in this process), on
// the same cluster measured first without tracers. See README.md, "Fleet".
func TestFleet(t *testing.T) {
	p := getFleetParams(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// The machine is shared: stop everything if its memory runs low (a
	// herd of tracers listing events from etcd at once can take GiBs).
	var guard sync.WaitGroup
	defer guard.Wait()
	guard.Go(func() { memoryGuard(ctx, cancel, p.minAvailable) })
	defer cancel(nil)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	dir, err := os.MkdirTemp("", "podchron-fleet-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	}()
	t0 := time.Now()
	cp, cs, d := startCluster(ctx, t, log, fleetPorts, p.etcd, p.binDir, p.kwok, dir, p.podsPerNode)
	defer cp.close()
	ts := time.Now()
	if err := d.grow(ctx, p.nodes, 16); err != nil {
		t.Fatalf("growing to %d nodes: %v", p.nodes, err)
	}
	if err := waitRunning(ctx, cs, cp); err != nil {
		t.Fatal(err)
	}
	r := fleetResult{p: p, pods: int(d.created.Load() - d.deleted.Load()), eventsWritten: int(d.events.Load())}
	log.Info("cluster grown", "nodes", p.nodes, "pods", r.pods, "events", r.eventsWritten, "took", time.Since(ts).Round(time.Second))

	// Churn runs through both windows (and the tracers' start between
	// them).
	cctx, stopChurn := context.WithCancel(ctx)
	churnDone := make(chan struct{})
	// 32 workers: each replacement is 8 requests in a row, and the API
	// server's latency grows while 500 tracers start and sit.
	go func() { defer close(churnDone); d.churn(cctx, p.churn, 32) }()
	defer func() { stopChurn(); <-churnDone }()
	// Let the churn reach its pace before the baseline.
	if err := sleepCtx(ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}

	rep0 := d.created.Load()
	r.base, err = measureWindow(ctx, cp, p.window, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.baseReplaced = d.created.Load() - rep0
	p.heapProfile(ctx, t, cp, "baseline")
	log.Info("baseline measured", "watches", r.base.end.watches["all"], "rss_mib", mib(r.base.end.vmRSS))

	nodes := make([]string, p.nodes)
	for i := range nodes {
		nodes[i] = nodeName(i)
	}
	if p.floor {
		measureFloor(ctx, t, log, cp, p, nodes, &r)
	}

	var ms0 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	ts = time.Now()
	r.sync0, err = sample(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	fl, err := startFleet(ctx, cp.kubeconfig, nodes, p.startRate, p.eventTTL)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = fl.stop(time.Minute)
		}
	}()
	if err := fl.waitSynced(ctx, log, cp, 15*time.Minute); err != nil {
		log.Error("tracers not synced", "rss", cp.rss())
		t.Fatal(err)
	}
	r.syncTook = time.Since(ts)
	r.sync1, err = sample(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	p.heapProfile(ctx, t, cp, "synced")
	log.Info("tracers synced", "tracers", len(fl.members), "took", r.syncTook.Round(time.Second))
	// The start's sweeps (each pod's history, one list each) go on after
	// the tracers are ready: the window measures the steady state after
	// them, a restarted fleet's cost is the start's above.
	if err := fl.waitSweepsDone(ctx, log, 15*time.Minute); err != nil {
		t.Fatal(err)
	}
	r.sweepsTook = time.Since(ts)
	if err := fl.waitWindowsSettled(ctx, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if p.settle > 0 {
		// The churn replaces the pods the tracers first saw quiet:
		// a window after them measures the pods seen from their start.
		log.Info("settling before the window", "for", p.settle)
		if err := sleepCtx(ctx, p.settle); err != nil {
			t.Fatal(err)
		}
	}
	r.before = fl.stats()
	rep0 = d.created.Load()
	r.with, err = measureWindow(ctx, cp, p.window, fl)
	if err != nil {
		t.Fatal(err)
	}
	r.withReplaced = d.created.Load() - rep0
	r.perNode = fl.stats()
	if r.inTransition, err = d.podsInTransition(ctx); err != nil {
		t.Fatal(err)
	}
	var ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	r.fleetHeap = int64(ms1.HeapAlloc) - int64(ms0.HeapAlloc)
	p.heapProfile(ctx, t, cp, "with-tracers")
	log.Info("with tracers measured", "watches", r.with.end.watches["all"], "rss_mib", mib(r.with.end.vmRSS))

	stopped = true
	if err := fl.stop(time.Minute); err != nil {
		t.Error(err)
	}
	// The API server ends a watch when its client goes away: the watches
	// open must fall back to the baseline (kwok's, give or take a
	// re-established one).
	if r.after, err = waitBaselineWatches(ctx, cp, r.base); err != nil {
		t.Error(err)
	}
	r.driverErrors = d.errors.Load()

	table := r.format()
	fmt.Println(table)
	t.Log("\n" + table)
	if p.out != "" {
		if err := os.WriteFile(p.out, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
	if r.perNode.notReady > 0 {
		t.Errorf("%d tracers not ready at the end of the window", r.perNode.notReady)
	}
	if r.perNode.foreign > 0 {
		t.Errorf("%d events about pods not on their tracer's node reached the model", r.perNode.foreign)
	}
	if r.perNode.foreignPods > 0 {
		t.Errorf("%d pods of other nodes reached a tracer's model", r.perNode.foreignPods)
	}
	t.Logf("total %s", time.Since(t0).Round(time.Second))
}

// waitBaselineWatches waits until the watches open are back to the
// baseline's, give or take a re-established one, and returns the last
// sample.
func waitBaselineWatches(ctx context.Context, cp *controlPlane, base window) (apiSample, error) {
	slack := max(5, base.end.watches["all"]/20)
	var last apiSample
	err := cp.waitFor(ctx, "watches back to baseline", time.Minute, func() error {
		s, err := sample(ctx, cp)
		if err != nil {
			return err
		}
		last = s
		if s.watches["all"] > base.end.watches["all"]+slack {
			return fmt.Errorf("%.0f watches open, %.0f at baseline", s.watches["all"], base.end.watches["all"])
		}
		return nil
	})
	return last, err
}

// measureFloor measures the floor (floor_test.go) between the baseline and
// the tracers, in r.floor, and stops it.
func measureFloor(ctx context.Context, t *testing.T, log *slog.Logger, cp *controlPlane, p fleetParams, nodes []string, r *fleetResult) {
	ts := time.Now()
	f, err := startFloor(ctx, cp.kubeconfig, nodes, p.startRate)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			f.stop()
		}
	}()
	if err := f.waitSynced(ctx, cp, 15*time.Minute); err != nil {
		t.Fatal(err)
	}
	log.Info("floor synced: a pod watch per node", "took", time.Since(ts).Round(time.Second))
	// The start's lists' garbage out of the way, as the tracers' window
	// waits for their sweeps.
	if err := sleepCtx(ctx, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	if r.floor, err = measureWindow(ctx, cp, p.window, nil); err != nil {
		t.Fatal(err)
	}
	p.heapProfile(ctx, t, cp, "floor")
	log.Info("floor measured", "watches", r.floor.end.watches["all"], "rss_mib", mib(r.floor.end.vmRSS))
	stopped = true
	f.stop()
	if _, err := waitBaselineWatches(ctx, cp, r.base); err != nil {
		t.Fatalf("after the floor: %v", err)
	}
}

type fleetParams struct {
	binDir, kwok string
	// floor: measure a bare pod watch per node too (floor_test.go),
	// PODCHRON_FLEET_FLOOR=0 skips it.
	floor bool
	// settle: how long the tracers run, after their start's sweeps,
	// before their window (PODCHRON_FLEET_SETTLE; 0: at once).
	settle       time.Duration
	pprof        string        // where the API server's heap profiles go ("": none)
	eventTTL     time.Duration // the watchers' Config.EventTTL (0: default)
	etcd         string
	nodes        int
	podsPerNode  int
	window       time.Duration
	churn        float64 // replacements per node per minute
	startRate    float64 // tracers started per second
	minAvailable uint64  // MemAvailable below which the test stops
	out          string
}

func getFleetParams(t *testing.T) fleetParams {
	if os.Getenv("PODCHRON_FLEET") != "1" {
		t.Skip("fleet test (one tracer watcher per simulated node, API server cost): run with `make fleet` (PODCHRON_FLEET=1)")
	}
	if os.Geteuid() != 0 {
		t.Skip("fleet test needs root (etcd, ports)")
	}
	binDir, kwok := binaries(t)
	p := fleetParams{binDir: binDir, kwok: kwok, nodes: 500, podsPerNode: 10, window: 2 * time.Minute, churn: 1,
		startRate: 2, minAvailable: 4 << 30, floor: os.Getenv("PODCHRON_FLEET_FLOOR") != "0", out: os.Getenv("PODCHRON_FLEET_OUT"), pprof: os.Getenv("PODCHRON_SCALE_PPROF"), etcd: env("PODCHRON_FLEET_ETCD", "etcd")}
	if _, err := exec.LookPath(p.etcd); err != nil {
		t.Fatalf("PODCHRON_FLEET_ETCD=%q: %v (make fleet builds etcd with test/scale/build-etcd.sh)", p.etcd, err)
	}
	intEnv := func(k string, into *int, lo int) {
		if v := os.Getenv(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < lo {
				t.Fatalf("%s=%q: want an integer >= %d", k, v, lo)
			}
			*into = n
		}
	}
	intEnv("PODCHRON_FLEET_NODES", &p.nodes, 1)
	intEnv("PODCHRON_FLEET_PODS", &p.podsPerNode, 1)
	if v := os.Getenv("PODCHRON_FLEET_EVENT_TTL"); v != "" {
		// A TTL shorter than the cluster's age: as if every pod were older
		// than the Events' TTL (a tracer restarted on a cluster that has
		// run for more than an hour), so none is swept.
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PODCHRON_FLEET_EVENT_TTL=%q: %v", v, err)
		}
		p.eventTTL = d
	}
	if v := os.Getenv("PODCHRON_FLEET_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second {
			t.Fatalf("PODCHRON_FLEET_WINDOW=%q: want a duration >= 10s", v)
		}
		p.window = d
	}
	if v := os.Getenv("PODCHRON_FLEET_SETTLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			t.Fatalf("PODCHRON_FLEET_SETTLE=%q: want a duration >= 0", v)
		}
		p.settle = d
	}
	if v := os.Getenv("PODCHRON_FLEET_CHURN"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			t.Fatalf("PODCHRON_FLEET_CHURN=%q: want pods/node/min > 0", v)
		}
		p.churn = f
	}
	if v := os.Getenv("PODCHRON_FLEET_START_RATE"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			t.Fatalf("PODCHRON_FLEET_START_RATE=%q: want tracers/s > 0", v)
		}
		p.startRate = f
	}
	mb := 0
	intEnv("PODCHRON_FLEET_MIN_AVAILABLE_MIB", &mb, 0)
	if mb > 0 {
		p.minAvailable = uint64(mb) << 20
	}
	return p
}

// memoryGuard cancels ctx when the machine's MemAvailable falls below
// minAvail, and returns when ctx is done.
func memoryGuard(ctx context.Context, cancel context.CancelCauseFunc, minAvail uint64) {
	for {
		if avail, err := memAvailable(); err == nil && avail < minAvail {
			cancel(fmt.Errorf("machine memory low: MemAvailable %d MiB < %d MiB (PODCHRON_FLEET_MIN_AVAILABLE_MIB)", avail>>20, minAvail>>20))
			return
		}
		if sleepCtx(ctx, time.Second) != nil {
			return
		}
	}
}

func memAvailable() (uint64, error) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no MemAvailable in /proc/meminfo")
}

// binaries returns kube-apiserver's directory and kwok, and checks that
// they and etcd are there.
func binaries(t *testing.T) (binDir, kwok string) {
	home, _ := os.UserHomeDir()
	cache := filepath.Join(home, ".cache", "podchron")
	if c := os.Getenv("PODCHRON_CACHE"); c != "" {
		cache = c
	}
	binDir = env("PODCHRON_SCALE_BIN", env("PODCHRON_E2E_BIN", filepath.Join(cache, "e2e", "bin")))
	kwok = env("PODCHRON_SCALE_KWOK", filepath.Join(cache, "scale", "bin", "kwok"))
	for _, b := range []string{filepath.Join(binDir, "kube-apiserver"), kwok} {
		if _, err := os.Stat(b); err != nil {
			t.Fatalf("%v (make scale and make fleet build it)", err)
		}
	}
	if _, err := exec.LookPath("etcd"); err != nil {
		t.Fatalf("etcd not on PATH (Debian etcd-server; scripts/install-deps.sh)")
	}
	return binDir, kwok
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		return nil
	}
}

// --- the API server's figures ---

// watchResources are the resources whose open watches are reported one by
// one ("all" is every resource's).
var watchResources = []string{"pods", "events"}

// apiSample is one reading of the API server's gauges and counters.
type apiSample struct {
	at time.Time
	// watches open (apiserver_longrunning_requests, verb WATCH or
	// WATCHLIST), by resource and "all"; longrunning is every long-running
	// request (watches, and exec/logs/proxy which nothing makes here).
	watches     map[string]float64
	longrunning float64
	// vmRSS is the kube-apiserver process's VmRSS (/proc/<pid>/status);
	// procRSS its process_resident_memory_bytes, heapInuse
	// go_memstats_heap_inuse_bytes.
	vmRSS              uint64
	procRSS, heapInuse float64
	// heapLive is go_gc_heap_live_bytes (the heap the last GC found
	// live: what the server keeps), heapGoal go_gc_heap_goal_bytes (where
	// the next GC starts: GOGC's room over it) and stacks
	// go_memory_classes_heap_stacks_bytes (goroutine stacks).
	heapLive, heapGoal, stacks float64
	goroutines                 float64
	cpuSeconds                 float64            // process_cpu_seconds_total
	watchEvents                map[string]float64 // apiserver_watch_events_total by resource
	eventWatches               int                // the tracers' event windows open (Stats), if any
	conns                      int                // established TCP connections to the API server's port
	// By resource: LIST requests, and those the watch cache served and
	// those it passed to etcd, with the objects etcd returned for them;
	// WATCH requests ended (a window's, once closed).
	lists, cacheLists, etcdLists, etcdFetched, watchRequests map[string]float64
}

func sample(ctx context.Context, cp *controlPlane) (apiSample, error) {
	m, err := cp.metrics(ctx)
	if err != nil {
		return apiSample{}, err
	}
	rss, err := vmRSS(cp.apiserver.PID())
	if err != nil {
		return apiSample{}, err
	}
	conns, err := establishedTo(cp.port)
	if err != nil {
		return apiSample{}, err
	}
	s := apiSample{
		at: time.Now(), vmRSS: rss, conns: conns,
		watches:     map[string]float64{"all": metricSum(m, "apiserver_longrunning_requests", `verb="WATCH`)},
		longrunning: metricSum(m, "apiserver_longrunning_requests"),
		procRSS:     metricSum(m, "process_resident_memory_bytes"),
		heapInuse:   metricSum(m, "go_memstats_heap_inuse_bytes"),
		heapLive:    metricSum(m, "go_gc_heap_live_bytes"),
		heapGoal:    metricSum(m, "go_gc_heap_goal_bytes"),
		stacks:      metricSum(m, "go_memory_classes_heap_stacks_bytes"),
		goroutines:  metricSum(m, "go_goroutines"),
		cpuSeconds:  metricSum(m, "process_cpu_seconds_total"),
		watchEvents: map[string]float64{},

		lists: map[string]float64{}, cacheLists: map[string]float64{}, etcdLists: map[string]float64{},
		etcdFetched: map[string]float64{}, watchRequests: map[string]float64{},
	}
	for _, res := range watchResources {
		s.watches[res] = metricSum(m, "apiserver_longrunning_requests", `verb="WATCH`, `resource="`+res+`"`)
		r := `resource="` + res + `"`
		s.watchEvents[res] = metricSum(m, "apiserver_watch_events_total", r)
		s.lists[res] = metricSum(m, "apiserver_request_total", `verb="LIST"`, r)
		s.watchRequests[res] = metricSum(m, "apiserver_request_total", `verb="WATCH`, r)
		s.cacheLists[res] = metricSum(m, "apiserver_cache_list_total", r)
		s.etcdLists[res] = metricSum(m, "apiserver_storage_list_total", r)
		s.etcdFetched[res] = metricSum(m, "apiserver_storage_list_fetched_objects_total", r)
	}
	return s, nil
}

// vmRSS reads a process's resident set size.
func vmRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("apiserver RSS: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseUint(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("apiserver VmRSS %q: %w", line, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("apiserver: no VmRSS in /proc/<pid>/status")
}

// establishedTo counts the established TCP connections (IPv4) whose local
// port is port: the API server's side of its clients' connections.
func establishedTo(port int) (int, error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0, fmt.Errorf("connections: %w", err)
	}
	want := fmt.Sprintf(":%04X", port)
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		// sl local_address rem_address st ...; st 01 is ESTABLISHED.
		if len(f) > 3 && strings.HasSuffix(f[1], want) && f[3] == "01" {
			n++
		}
	}
	return n, nil
}

// window is a measurement over a window of time: its first and last
// samples, and one every sampleEvery in between.
type window struct {
	start, end apiSample
	samples    []apiSample // start, ..., end
}

const sampleEvery = 10 * time.Second

func measureWindow(ctx context.Context, cp *controlPlane, length time.Duration, fl *fleet) (window, error) {
	var w window
	take := func() error {
		s, err := sample(ctx, cp)
		if err != nil {
			return err
		}
		if fl != nil {
			s.eventWatches = fl.stats().eventWatches
		}
		w.samples = append(w.samples, s)
		return cp.dead()
	}
	if err := take(); err != nil {
		return w, err
	}
	end := time.Now().Add(length)
	for time.Until(end) > 0 {
		if err := sleepCtx(ctx, min(sampleEvery, time.Until(end))); err != nil {
			return w, err
		}
		if err := take(); err != nil {
			return w, err
		}
	}
	w.start, w.end = w.samples[0], w.samples[len(w.samples)-1]
	return w, nil
}

func (w window) minutes() float64 { return w.end.at.Sub(w.start.at).Minutes() }

// mean averages f over the window's samples.
func (w window) mean(f func(apiSample) float64) float64 {
	var sum float64
	for _, s := range w.samples {
		sum += f(s)
	}
	return sum / float64(len(w.samples))
}

func (w window) peak(f func(apiSample) float64) float64 {
	var m float64
	for _, s := range w.samples {
		m = max(m, f(s))
	}
	return m
}

// cores is the API server's CPU use over the window.
func (w window) cores() float64 {
	return (w.end.cpuSeconds - w.start.cpuSeconds) / w.end.at.Sub(w.start.at).Seconds()
}

func (w window) watchEventsPerMin(res string) float64 {
	return (w.end.watchEvents[res] - w.start.watchEvents[res]) / w.minutes()
}

// --- the fleet: one watcher per node ---

// fleet runs one internal/watcher per node in this process, each with its
// own client (watcher.RESTConfig, as the tracer makes it) and so its own
// transport and TCP/TLS connection to the API server, as tracers on
// different nodes have.
type fleet struct {
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	members []*member
}

type member struct {
	node string
	w    *watcher.Watcher
	// What the watcher handed the model: pods (and those of another
	// node), events (and those about a pod it never handed over).
	podIn, foreignPods, evIn, foreign atomic.Uint64
	runErr                            error
}

// paced waits for tick before every item but the first (i > 0); false
// when ctx ends first.
func paced(ctx context.Context, tick *time.Ticker, i int) bool {
	if i == 0 {
		return true
	}
	select {
	case <-ctx.Done():
		return false
	case <-tick.C:
		return true
	}
}

// nodeClient is one node's client, as the tracer makes it
// (watcher.RESTConfig: protobuf, default QPS), with a connection of its
// own: a Dial of its own makes client-go build it its own transport (its
// cache keys on the dialer), as tracers on different nodes have, not one
// HTTP/2 connection multiplexing them all.
func nodeClient(kubeconfig string) (watcher.Client, error) {
	cfg, err := watcher.RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = dialer.DialContext
	return watcher.NewClientForConfig(cfg)
}

// eventTTL is each watcher's Config.EventTTL (0: its default).
func startFleet(ctx context.Context, kubeconfig string, nodes []string, perSecond float64, eventTTL time.Duration) (*fleet, error) {
	fctx, cancel := context.WithCancel(ctx)
	fl := &fleet{cancel: cancel}
	// Warnings only: 500 watchers' informer chatter would drown the log.
	wlog := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	tick := time.NewTicker(time.Duration(float64(time.Second) / perSecond))
	defer tick.Stop()
	for i, node := range nodes {
		if !paced(ctx, tick, i) {
			fl.stop(time.Minute) //nolint:errcheck // reporting the cause
			return nil, context.Cause(ctx)
		}
		client, err := nodeClient(kubeconfig)
		if err != nil {
			fl.stop(time.Minute) //nolint:errcheck // reporting the first error
			return nil, fmt.Errorf("fleet: node %s: %w", node, err)
		}
		// PODCHRON_FLEET_NO_SLICES=1: tracers run with --no-endpoint-slices.
		w, err := watcher.New(watcher.Config{Client: client, NodeName: node, EventTTL: eventTTL, Logger: wlog,
			NoEndpointSlices: os.Getenv("PODCHRON_FLEET_NO_SLICES") == "1"})
		if err != nil {
			fl.stop(time.Minute) //nolint:errcheck // reporting the first error
			return nil, fmt.Errorf("fleet: node %s: %w", node, err)
		}
		m := &member{node: node, w: w}
		fl.members = append(fl.members, m)
		out := make(chan fact.Input, 256)
		fl.wg.Go(func() { m.drain(out) })
		fl.wg.Go(func() {
			defer close(out)
			m.runErr = w.Run(fctx, out)
		})
	}
	return fl, nil
}

// drain reads the watcher's output until it is closed, checking that it
// only ever concerns this node's pods.
func (m *member) drain(out <-chan fact.Input) {
	seen := map[string]bool{}
	for in := range out {
		switch {
		case in.Pod != nil:
			m.podIn.Add(1)
			seen[in.Pod.UID] = true
			if in.Pod.NodeName != m.node {
				m.foreignPods.Add(1)
			}
		case in.Event != nil:
			m.evIn.Add(1)
			if !seen[in.Event.PodUID] {
				m.foreign.Add(1)
			}
		}
	}
}

// stop cancels every watcher and waits for their goroutines.
func (fl *fleet) stop(timeout time.Duration) error {
	fl.cancel()
	done := make(chan struct{})
	go func() { fl.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		return fmt.Errorf("fleet: watchers still running %s after cancel", timeout)
	}
	var errs []error
	for _, m := range fl.members {
		if m.runErr != nil && !errors.Is(m.runErr, context.Canceled) {
			errs = append(errs, fmt.Errorf("watcher %s: %w", m.node, m.runErr))
		}
	}
	return errors.Join(errs...)
}

func (fl *fleet) waitSynced(ctx context.Context, log *slog.Logger, cp *controlPlane, timeout time.Duration) error {
	next := time.Now()
	return cp.waitFor(ctx, "tracers synced", timeout, func() error {
		n := 0
		for _, m := range fl.members {
			if !m.w.Ready() {
				n++
			}
		}
		if time.Now().After(next) {
			next = time.Now().Add(10 * time.Second)
			avail, _ := memAvailable()
			log.Info("tracers syncing", "not_synced", n, "event_watches", fl.stats().eventWatches,
				"rss", cp.rss(), "mem_available_mib", avail>>20)
		}
		if n > 0 {
			return fmt.Errorf("%d of %d tracers not synced", n, len(fl.members))
		}
		return nil
	})
}

// waitWindowsSettled waits until the event windows open across the fleet
// stop changing for a few seconds (a synced watcher opens its standby
// windows right after).
// waitSweepsDone waits until no watcher has a sweep due.
func (fl *fleet) waitSweepsDone(ctx context.Context, log *slog.Logger, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		n := fl.stats().sweepsDue
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d sweeps still due after %s", n, timeout)
		}
		log.Info("sweeps due", "pods", n)
		if err := sleepCtx(ctx, 5*time.Second); err != nil {
			return err
		}
	}
}

func (fl *fleet) waitWindowsSettled(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last, same := -1, 0
	for same < 3 && time.Now().Before(deadline) {
		n := fl.stats().eventWatches
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		if err := sleepCtx(ctx, 2*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// fleetStats is the fleet's watchers' Stats, added up.
type fleetStats struct {
	tracers, notReady                    int
	eventWatches, minWatches, maxWatches int
	eventsCached, podsCached             int
	podIn, evIn, foreign, foreignPods    uint64
	sweeps, unswept                      uint64
	sweepsDue, sweepsDeferred            int
	// how the windows started: lists, resumed, resumed but expired
	winLists, winResumed, resumesExpired uint64
	// the windows' lists that failed, and those canceled by their close
	winListsFailed, winListsCanceled uint64
}

func (fl *fleet) stats() fleetStats {
	s := fleetStats{tracers: len(fl.members), minWatches: -1}
	for _, m := range fl.members {
		st := m.w.Stats()
		if !m.w.Ready() {
			s.notReady++
		}
		s.eventWatches += st.EventWatches
		s.maxWatches = max(s.maxWatches, st.EventWatches)
		if s.minWatches < 0 || st.EventWatches < s.minWatches {
			s.minWatches = st.EventWatches
		}
		s.eventsCached += st.EventsCached
		s.podsCached += st.PodsCached
		s.sweeps += st.EventSweeps
		s.unswept += st.Unswept
		s.sweepsDue += st.SweepsDue
		s.sweepsDeferred += st.SweepsDeferred
		s.winLists += st.WindowLists
		s.winResumed += st.WindowsResumed
		s.resumesExpired += st.ResumesExpired
		s.winListsFailed += st.WindowListsFailed
		s.winListsCanceled += st.WindowListsCanceled
		s.podIn += m.podIn.Load()
		s.evIn += m.evIn.Load()
		s.foreign += m.foreign.Load()
		s.foreignPods += m.foreignPods.Load()
	}
	return s
}

// --- the report ---

type fleetResult struct {
	p                          fleetParams
	pods, eventsWritten        int
	base, with                 window
	floor                      window    // a bare pod watch per node (p.floor)
	after                      apiSample // once the tracers stopped
	sync0, sync1               apiSample // before the first tracer started, once all had synced
	baseReplaced, withReplaced uint64    // pods replaced by the churn in each window
	perNode                    fleetStats
	before                     fleetStats // at the window's start
	syncTook, sweepsTook       time.Duration
	fleetHeap                  int64 // this process's heap after GC, with the fleet minus without
	driverErrors               uint64
	inTransition               int // pods terminating or not Ready at the window's end
}

func (r fleetResult) format() string {
	var b strings.Builder
	n := float64(r.p.nodes)
	fmt.Fprintf(&b, "podchron fleet: %d nodes, %d pods/node (%d pods, %d events written, in 10 namespaces), churn %.1f pods/node/min, windows of %s;\n",
		r.p.nodes, r.p.podsPerNode, r.pods, r.eventsWritten, r.p.churn, r.p.window)
	fmt.Fprintf(&b, "one internal/watcher per node (%d, in one process, a client and connection each), synced in %s, their window %s after their start's sweeps; etcd %s\n\n",
		r.perNode.tracers, r.syncTook.Round(time.Second), r.p.settle, r.p.etcd)
	fmt.Fprintf(&b, "| kube-apiserver | no tracers | %d tracers | added | added per node |\n|---|---:|---:|---:|---:|\n", r.perNode.tracers)
	row := func(name, format string, base, with float64, perNode bool) {
		pn := ""
		if perNode {
			pn = fmt.Sprintf("%.2f", (with-base)/n)
		}
		fmt.Fprintf(&b, "| %s | "+format+" | "+format+" | "+format+" | %s |\n", name, base, with, with-base, pn)
	}
	// Gauges at the end of each window (the fleet's windows are settled
	// by then).
	for _, res := range append(append([]string(nil), watchResources...), "all") {
		row("watches open: "+res, "%.0f", r.base.end.watches[res], r.with.end.watches[res], true)
	}
	row("long-running requests", "%.0f", r.base.end.longrunning, r.with.end.longrunning, true)
	row("TCP connections to it", "%.0f", float64(r.base.end.conns), float64(r.with.end.conns), true)
	row("goroutines", "%.0f", r.base.end.goroutines, r.with.end.goroutines, true)
	vm := func(s apiSample) float64 { return mib(s.vmRSS) }
	row("RSS MiB (VmRSS, mean of window)", "%.0f", r.base.mean(vm), r.with.mean(vm), false)
	row("RSS MiB (VmRSS, peak)", "%.0f", r.base.peak(vm), r.with.peak(vm), false)
	row("RSS MiB (process_resident_memory_bytes, end)", "%.0f", r.base.end.procRSS/(1<<20), r.with.end.procRSS/(1<<20), false)
	heap := func(s apiSample) float64 { return s.heapInuse / (1 << 20) }
	row("Go heap in use MiB (mean of window)", "%.0f", r.base.mean(heap), r.with.mean(heap), false)
	live := func(s apiSample) float64 { return s.heapLive / (1 << 20) }
	row("Go heap live after GC MiB (mean of window)", "%.0f", r.base.mean(live), r.with.mean(live), false)
	goal := func(s apiSample) float64 { return s.heapGoal / (1 << 20) }
	row("Go heap goal MiB (mean of window)", "%.0f", r.base.mean(goal), r.with.mean(goal), false)
	stacks := func(s apiSample) float64 { return s.stacks / (1 << 20) }
	row("goroutine stacks MiB (mean of window)", "%.1f", r.base.mean(stacks), r.with.mean(stacks), false)
	kept := func(s apiSample) float64 { return live(s) + stacks(s) }
	addedRSS := r.with.mean(vm) - r.base.mean(vm)
	fmt.Fprintf(&b, "| RSS added per node (KiB) | | | | %.0f |\n", addedRSS*1024/n)
	row("CPU cores (process_cpu_seconds_total Δ / window)", "%.3f", r.base.cores(), r.with.cores(), false)
	fmt.Fprintf(&b, "| CPU added per node (millicores) | | | | %.2f |\n", (r.with.cores()-r.base.cores())*1000/n)
	for _, res := range watchResources {
		row("watch events sent/min: "+res, "%.0f", r.base.watchEventsPerMin(res), r.with.watchEventsPerMin(res), true)
	}
	perMin := func(w window, f func(apiSample) float64) float64 { return (f(w.end) - f(w.start)) / w.minutes() }
	type counter struct {
		name string
		m    func(apiSample) map[string]float64
	}
	counters := []counter{
		{"WATCH requests ended/min", func(s apiSample) map[string]float64 { return s.watchRequests }},
		{"LIST requests/min", func(s apiSample) map[string]float64 { return s.lists }},
		{"… served by the watch cache/min", func(s apiSample) map[string]float64 { return s.cacheLists }},
		{"… passed to etcd/min", func(s apiSample) map[string]float64 { return s.etcdLists }},
		{"… objects etcd returned for them/min", func(s apiSample) map[string]float64 { return s.etcdFetched }},
	}
	for _, res := range watchResources {
		for _, c := range counters {
			f := func(s apiSample) float64 { return c.m(s)[res] }
			row(res+": "+c.name, "%.0f", perMin(r.base, f), perMin(r.with, f), true)
		}
	}
	fmt.Fprintf(&b, "| pods replaced by the churn (window) | %d | %d | | |\n", r.baseReplaced, r.withReplaced)
	if len(r.floor.samples) > 0 {
		fmt.Fprintf(&b, "\nThe floor, measured between the two: a bare pod watch per node (spec.nodeName=<node>, a client and connection each; the kubelet's own pod source, which a real cluster's API server already carries for every node):\n\n")
		fmt.Fprintf(&b, "| kube-apiserver | no tracers | a pod watch per node | %d tracers | tracers over the floor | per node |\n|---|---:|---:|---:|---:|---:|\n", r.perNode.tracers)
		frow := func(name, format string, f func(apiSample) float64, end, perNode bool) {
			v := func(w window) float64 {
				if end {
					return f(w.end)
				}
				return w.mean(f)
			}
			b0, fl, w := v(r.base), v(r.floor), v(r.with)
			pn := ""
			if perNode {
				pn = fmt.Sprintf("%.2f", (w-fl)/n)
			}
			fmt.Fprintf(&b, "| %s | "+format+" | "+format+" | "+format+" | "+format+" | %s |\n", name, b0, fl, w, w-fl, pn)
		}
		frow("watches open: all (end)", "%.0f", func(s apiSample) float64 { return s.watches["all"] }, true, true)
		frow("TCP connections to it (end)", "%.0f", func(s apiSample) float64 { return float64(s.conns) }, true, true)
		frow("goroutines (end)", "%.0f", func(s apiSample) float64 { return s.goroutines }, true, true)
		frow("RSS MiB (VmRSS, mean of window)", "%.0f", vm, false, false)
		frow("Go heap live after GC MiB (mean)", "%.1f", live, false, false)
		frow("Go heap goal MiB (mean)", "%.0f", goal, false, false)
		frow("goroutine stacks MiB (mean)", "%.1f", stacks, false, false)
		frow("kept: live heap + stacks MiB (mean)", "%.1f", kept, false, false)
		fmt.Fprintf(&b, "| CPU cores | %.3f | %.3f | %.3f | %.3f | |\n", r.base.cores(), r.floor.cores(), r.with.cores(), r.with.cores()-r.floor.cores())
	}
	fmt.Fprintf(&b, "\nTracers' start (%.0f/s, until all synced, %s): API server CPU %.0f s, RSS %.0f → %.0f MiB;",
		r.p.startRate, r.syncTook.Round(time.Second), r.sync1.cpuSeconds-r.sync0.cpuSeconds, mib(r.sync0.vmRSS), mib(r.sync1.vmRSS))
	for _, res := range watchResources {
		d := func(m func(apiSample) map[string]float64) float64 { return m(r.sync1)[res] - m(r.sync0)[res] }
		fmt.Fprintf(&b, " %s: LIST %.0f (watch cache %.0f, etcd %.0f returning %.0f objects);", res,
			d(counters[1].m), d(counters[2].m), d(counters[3].m), d(counters[4].m))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "After the tracers stopped: %.0f watches open (pods %.0f, events %.0f), RSS %.0f MiB.\n",
		r.after.watches["all"], r.after.watches["pods"], r.after.watches["events"], mib(r.after.vmRSS))

	st := r.perNode
	fmt.Fprintf(&b, "\nPer tracer at the end of the window: event watches (windows) mean %.2f, min %d, max %d (cap %d); mean over the window %.2f;\n",
		float64(st.eventWatches)/n, st.minWatches, st.maxWatches, watcher.DefaultMaxEventWatches,
		r.with.mean(func(s apiSample) float64 { return float64(s.eventWatches) })/n)
	fmt.Fprintf(&b, "pods in transition (terminating or not Ready) at the end of the window: %d, %.2f per node (what the windows follow);\n",
		r.inTransition, float64(r.inTransition)/n)
	fmt.Fprintf(&b, "event sweeps (one-off lists of a pod's events) %d in all, %.1f per tracer, %d deferred at the end (until shortly before the pod's oldest Events could expire); pods first seen quiet with no change within the Events' TTL (%s), not swept: %d;\n",
		st.sweeps, float64(st.sweeps)/n, st.sweepsDeferred, ttlString(r.p.eventTTL), st.unswept)
	fmt.Fprintf(&b, "the start's sweeps all made %s after the first tracer started; in the window: %d sweeps, event windows started by a list of the namespace's Events %d, resumed from a resource version %d (of which %d expired and listed); window lists that failed %d (canceled as their window closed %d);\n",
		r.sweepsTook.Round(time.Second), st.sweeps-r.before.sweeps, st.winLists-r.before.winLists, st.winResumed-r.before.winResumed, st.resumesExpired-r.before.resumesExpired,
		st.winListsFailed-r.before.winListsFailed, st.winListsCanceled-r.before.winListsCanceled)
	fmt.Fprintf(&b, "pods cached %.1f, events cached %.1f; to the model: %d pod and %d event inputs in all, %d foreign events, %d foreign pods, %d tracers not ready.\n",
		float64(st.podsCached)/n, float64(st.eventsCached)/n, st.podIn, st.evIn, st.foreign, st.foreignPods, st.notReady)
	fmt.Fprintf(&b, "Fleet process heap added: %.1f MiB (%.0f KiB per watcher). Driver API errors: %d.\n",
		float64(r.fleetHeap)/(1<<20), float64(r.fleetHeap)/1024/n, r.driverErrors)

	perNode := (r.with.end.watches["all"] - r.base.end.watches["all"]) / n
	pct := 100 * addedRSS / r.base.mean(vm)
	fmt.Fprintf(&b, "\nTargets (reported, not asserted):\n")
	fmt.Fprintf(&b, "- watches added per node ≤ 2 (a kubelet's own, on average): %.2f — %s\n", perNode, met(perNode <= 2))
	fmt.Fprintf(&b, "- API server memory added ≤ 10 %% (VmRSS, window means): +%.0f MiB = %.1f %% of %.0f MiB — %s\n",
		addedRSS, pct, r.base.mean(vm), met(pct <= 10))
	if k0 := r.base.mean(kept); k0 > 0 {
		// What the tracers make the server keep, beside what its RSS
		// shows: the rest is the GC's room over the live heap and memory
		// the runtime has not returned since the start's lists.
		k1 := r.with.mean(kept)
		fmt.Fprintf(&b, "  of which kept (live heap after GC + goroutine stacks, window means): +%.1f MiB = %.1f %% of %.0f MiB, %.0f KiB per node\n",
			k1-k0, 100*(k1-k0)/k0, k0, (k1-k0)*1024/n)
	}
	if len(r.floor.samples) > 0 {
		b0, fl, w := r.base.mean(vm), r.floor.mean(vm), r.with.mean(vm)
		k0, kf, kw := r.base.mean(kept), r.floor.mean(kept), r.with.mean(kept)
		fmt.Fprintf(&b, "- the floor (a bare pod watch per node, any per-node agent's least): RSS +%.0f MiB = %.1f %% of the baseline; kept +%.1f MiB = %.1f %%, %.0f KiB per node\n",
			fl-b0, 100*(fl-b0)/b0, kf-k0, 100*(kf-k0)/k0, (kf-k0)*1024/n)
		fmt.Fprintf(&b, "- the tracers over the floor (podchron's own design: its event windows, sweeps and lists): RSS %+.0f MiB = %.1f %% of the baseline; kept %+.1f MiB = %.1f %%, %.0f KiB per node\n",
			w-fl, 100*(w-fl)/b0, kw-kf, 100*(kw-kf)/k0, (kw-kf)*1024/n)
	}
	return b.String()
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// heapProfile saves the API server's heap profile as <pprof>/<name>.pb.gz
// when PODCHRON_SCALE_PPROF names a directory (go tool pprof reads it).
func (p fleetParams) heapProfile(ctx context.Context, t *testing.T, cp *controlPlane, name string) {
	if p.pprof == "" {
		return
	}
	if err := os.MkdirAll(p.pprof, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := cp.heapProfile(ctx, filepath.Join(p.pprof, name+".pb.gz")); err != nil {
		t.Errorf("heap profile %s: %v", name, err)
	}
}

func ttlString(d time.Duration) string {
	if d == 0 {
		return watcher.DefaultEventTTL.String() + ", the default"
	}
	return d.String()
}
