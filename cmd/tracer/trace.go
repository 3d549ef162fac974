package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podchron/podchron/internal/clock"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/probe"
	"github.com/podchron/podchron/internal/redact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/checkpoint"
	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/cri"
	"github.com/podchron/podchron/internal/export/console"
	"github.com/podchron/podchron/internal/export/metrics"
	"github.com/podchron/podchron/internal/export/otlp"
	"github.com/podchron/podchron/internal/pipeline"
	"github.com/podchron/podchron/internal/record"
	"github.com/podchron/podchron/internal/watcher"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

type traceFlags struct {
	probeFlags
	node        string
	kubeconfig  string
	noAPI       bool
	noSlices    bool
	runtime     string
	noRuntime   bool
	metricsAddr string
	output      string
	verbose     bool
	stuckAfter  time.Duration
	startupTO   time.Duration
	cluster     string
	podLabels   listFlag
	nsInclude   string
	nsExclude   string
	stateDir    string
	eventTTL    time.Duration
}

func (f *traceFlags) register(fs *flag.FlagSet) {
	host, _ := os.Hostname()
	node := os.Getenv("NODE_NAME")
	if node == "" {
		node = host
	}
	fs.StringVar(&f.node, "node-name", node, "this node's name (default $NODE_NAME, else the host name)")
	fs.StringVar(&f.cluster, "cluster-name", os.Getenv("K8S_CLUSTER_NAME"), "k8s.cluster.name on every span (default $K8S_CLUSTER_NAME; empty: none)")
	fs.Var(&f.podLabels, "pod-label", "a pod label to export as k8s.pod.label.<key> (repeatable; none by default)")
	fs.StringVar(&f.nsInclude, "namespace-include", "", "trace only pods of namespaces matching this regular expression (whole name; empty: all)")
	fs.StringVar(&f.nsExclude, "namespace-exclude", "", "do not trace pods of namespaces matching this regular expression (whole name); a pod annotated "+fact.OptOutAnnotation+`: "false" is never traced`)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig for the API server (default: in-cluster, else $KUBECONFIG)")
	fs.BoolVar(&f.noAPI, "no-api", false, "do not use the API server (kernel and runtime facts only)")
	fs.BoolVar(&f.noSlices, "no-endpoint-slices", false, "do not watch EndpointSlices (one cluster-wide watch per node, as kube-proxy's): the traces then do not show Services adding and withdrawing pods")
	fs.StringVar(&f.runtime, "runtime-endpoint", "", "CRI socket (default: auto-detect containerd, CRI-O)")
	fs.BoolVar(&f.noRuntime, "no-runtime", false, "do not use the container runtime (kernel and API facts only)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", ":9464", "serve /metrics, /healthz, /readyz here (empty: off)")
	fs.StringVar(&f.output, "output", "text", "console output when no OTLP endpoint is set: text, json or none")
	fs.BoolVar(&f.verbose, "verbose", false, "console: show every span attribute")
	fs.StringVar(&f.stateDir, "state-dir", "/var/lib/podchron", "where the tracer keeps its checkpoint on the node (the span IDs it emitted, so that a restarted tracer tells none twice; empty: none)")
	fs.DurationVar(&f.stuckAfter, "stuck-after", 30*time.Second, "report a terminating pod stuck this long after its grace period ended")
	fs.DurationVar(&f.eventTTL, "event-ttl", watcher.DefaultEventTTL, "the API server's --event-ttl: a pod first seen Ready gets its Events listed shortly before the oldest could expire (creation + TTL - min(TTL/4, 10m)), one whose status records no change within it gets none (negative: every pod first seen quiet is listed at once)")
	fs.DurationVar(&f.startupTO, "startup-timeout", 10*time.Minute, "end a pod's start-up as an error when it is not Ready this long after creation (0: only at termination)")
	f.probeFlags.register(fs)
}

// checkOutput checks where spans will go before anything starts: the OTLP
// variables when an endpoint is set, else the console format.
func (f *traceFlags) checkOutput() error {
	if otlp.Configured() {
		return otlp.ValidateEnv()
	}
	if f.output == "none" {
		return nil
	}
	if _, err := console.ParseFormat(f.output); err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	return nil
}

// sinks builds where spans go: OTLP when an endpoint is configured, else the
// console timeline. The returned stop flushes them.
func sinks(ctx context.Context, f *traceFlags, stdout io.Writer, log *slog.Logger) (span.Sink, metrics.SpanStats, func(context.Context), error) {
	if otlp.Configured() {
		exp, err := otlp.New(ctx, otlp.Config{NodeName: f.node, ServiceVersion: version, Logger: log})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("OTLP exporter: %w", err)
		}
		log.Info("exporting spans over OTLP (OTEL_EXPORTER_OTLP_* is set)")
		return exp, spanStats{exp}, func(ctx context.Context) {
			if err := exp.Shutdown(ctx); err != nil {
				log.Warn("OTLP shutdown", "err", err)
			}
		}, nil
	}
	if f.output == "none" {
		return span.SinkFunc(func(span.Span) {}), nil, func(context.Context) {}, nil
	}
	format, err := console.ParseFormat(f.output)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--output: %w", err)
	}
	p := console.New(stdout, console.Config{Format: format, Verbose: f.verbose})
	log.Info("no OTLP endpoint configured (OTEL_EXPORTER_OTLP_ENDPOINT): printing pod timelines")
	return p, nil, func(context.Context) { p.Close() }, nil
}

type spanStats struct{ e *otlp.Exporter }

func (s spanStats) Stats() (uint64, map[string]uint64) {
	exported, _, _ := s.e.Stats()
	return exported, s.e.Drops().ByReason()
}

// runTrace is the daemon: probes, runtime and API server in, spans and
// metrics out. With recordPath it also records the input stream.
func runTrace(args []string, recordPath string, stdout, stderr io.Writer) error {
	f, set, err := parseTrace(args, stderr)
	if err != nil {
		return err
	}
	log := set.log
	metricsLn, recordFile, closeOutputs, err := openOutputs(f, recordPath)
	if err != nil {
		return err
	}
	defer closeOutputs()
	ctx, cancel := traceContext(f.duration)
	defer cancel()

	// Metrics and health first: /healthz must answer while we start.
	health := metrics.NewHealth(metrics.HealthOptions{Logger: log})
	rec := metrics.NewRecorder(metrics.Limits{})

	sink, stats, stopSinks, err := sinks(ctx, f, stdout, log)
	if err != nil {
		return err
	}

	// One timeline for every source: the boot clock from an epoch fixed
	// now, so a wall-clock step moves no span and no timer.
	tl := clock.New(clock.System{})
	set.probe.Clock = tl
	// Kernel.
	p, src, closeProbes, err := loadProbes(set.probe, log, "node", f.node)
	if err != nil {
		stopSinks(ctx)
		return err
	}
	defer closeProbes()
	health.SetReady(pipeline.SourceKernel, true, "")
	var pipeStats pipeline.Stats
	ls := liveSources(f, log, health, tl.Now)
	reg, err := metricsRegistry(rec, health, stats, &pipeStats, append(ls.collectors(),
		metrics.NewProbeCollector(p.Counters, log),
		metrics.NewReaderCollector(src.DecodeErrors.Load),
		metrics.NewMemoryCollector(log))...)
	if err != nil {
		return err
	}
	serveErr := serveMetrics(ctx, metricsLn, reg, health, log)

	sink, emitted, closeCheckpoint := openCheckpoint(f.stateDir, sink, log)
	defer closeCheckpoint()
	corr := correlate.New(correlate.Config{NodeName: f.node, Sink: sink, Observer: rec, CgroupRoots: set.probe.CgroupRoots, StuckAfter: f.stuckAfter, StartupTimeout: f.startupTO, ClusterName: f.cluster, Args: set.args, Filter: set.filter, Emitted: emitted,
		WantEvents: ls.wantEvents})
	seed, err := pipeline.Seed(p.Layout(), set.probe.CgroupRoots, tl.Now(), f.node)
	if err != nil {
		log.Warn("start-up scan incomplete: pods already running may be partly known", "err", err)
	}
	rw, err := recordWriter(recordFile, set.args, log)
	if err != nil {
		return err
	}
	err = pipeline.Run(ctx, pipeline.Config{
		Kernel:      src,
		Counters:    p.Counters,
		Throttled:   p.Throttled,
		Seed:        append(seed, ls.seed...),
		Sources:     ls.sources,
		Correlator:  corr,
		Record:      rw,
		Timeline:    tl,
		Tick:        500 * time.Millisecond,
		Progress:    ls.progress,
		Heartbeat:   health.Beat,
		RuntimeKick: ls.runtimeKick, // nil without the runtime
		RuntimePoll: ls.runtimePoll, // nil without the runtime
		Pace:        ls.pace,
		SourceState: func(name string, ok bool, reason string) {
			health.SetReady(name, ok, reason)
		},
		Stats:  &pipeStats,
		Logger: log,
	})
	stopTrace(stopSinks, serveErr, corr, rw, recordPath, log)
	return err
}

// openCheckpoint opens the node's checkpoint in dir: the span IDs the
// previous instance emitted, and a sink that records each new one before
// passing it on. Without one (dir empty, or unusable: a clear warning) a
// restart may tell a span the previous instance told, with other content.
func openCheckpoint(dir string, sink span.Sink, log *slog.Logger) (span.Sink, []span.SpanID, func()) {
	if dir == "" {
		return sink, nil, func() {}
	}
	cp, ids, err := checkpoint.Open(dir, checkpoint.DefaultSlots)
	if err != nil {
		log.Warn("no checkpoint: after a restart, spans the previous tracer emitted may be emitted again", "err", err)
		return sink, nil, func() {}
	}
	log.Info("checkpoint", "dir", dir, "span_ids", len(ids), "written_before", cp.Written())
	sink = cp.Sink(sink, func(err error) {
		log.Warn("checkpoint write failed: recording stopped; spans go on", "err", err)
	})
	return sink, ids, func() {
		if err := cp.Close(); err != nil {
			log.Warn("checkpoint close", "err", err)
		}
	}
}

// traceContext is done at SIGINT or SIGTERM, or after d (0: no limit).
func traceContext(d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if d <= 0 {
		return ctx, cancel
	}
	ctx, c2 := context.WithTimeout(ctx, d)
	return ctx, func() { c2(); cancel() }
}

// stopTrace flushes the sinks (10 s at most), waits for the metrics server
// and logs what the run did.
func stopTrace(stopSinks func(context.Context), serveErr <-chan error, corr *correlate.Correlator, rw *record.Writer, recordPath string, log *slog.Logger) {
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	stopSinks(sctx)
	if e := <-serveErr; e != nil && !errors.Is(e, context.Canceled) {
		log.Warn("metrics server", "err", e)
	}
	st := corr.Stats()
	log.Info("stopped", "inputs", st.Inputs, "spans", st.SpansEmitted, "spans_filtered", st.SpansFiltered, "live_pods", st.LivePods, "live_procs", st.LiveProcs, "correlation_misses", st.Misses)
	if rw != nil {
		log.Info("recorded", "inputs", rw.Count(), "file", recordPath)
	}
}

// traceSettings are the trace command's settings checked and built from
// its flags.
type traceSettings struct {
	log    *slog.Logger
	probe  probe.Config
	args   redact.Policy
	filter correlate.Filter
}

// parseTrace parses the trace command's flags. Everything that can be
// wrong with the settings fails here, before a probe is attached or a port
// is taken.
func parseTrace(args []string, stderr io.Writer) (*traceFlags, traceSettings, error) {
	var set traceSettings
	fs := flag.NewFlagSet("tracer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &traceFlags{}
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, set, err
	}
	if fs.NArg() > 0 {
		return nil, set, fmt.Errorf("unexpected argument %q (see tracer -h)", fs.Arg(0))
	}
	var err error
	if set.log, err = f.logger(stderr); err != nil {
		return nil, set, err
	}
	if set.probe, err = f.probeConfig(set.log); err != nil {
		return nil, set, err
	}
	if err := f.checkOutput(); err != nil {
		return nil, set, err
	}
	if set.args, err = f.argsPolicy(); err != nil {
		return nil, set, err
	}
	if set.filter, err = correlate.NewFilter(f.nsInclude, f.nsExclude); err != nil {
		return nil, set, fmt.Errorf("--namespace-include/--namespace-exclude: %w", err)
	}
	if f.stuckAfter <= 0 {
		return nil, set, fmt.Errorf("--stuck-after %s: must be positive", f.stuckAfter)
	}
	if f.startupTO < 0 {
		return nil, set, fmt.Errorf("--startup-timeout %s: must not be negative", f.startupTO)
	}
	return f, set, nil
}

// openOutputs takes the metrics port and creates the record file (when
// asked for); the returned func closes both.
func openOutputs(f *traceFlags, recordPath string) (net.Listener, *os.File, func(), error) {
	var metricsLn net.Listener
	var err error
	if f.metricsAddr != "" {
		if metricsLn, err = metrics.Listen(f.metricsAddr); err != nil {
			return nil, nil, nil, err
		}
	}
	var recordFile *os.File
	if recordPath != "" {
		// The stream holds command lines and pod metadata: owner-only,
		// never through a symbolic link.
		if recordFile, err = record.Create(recordPath); err != nil {
			if metricsLn != nil {
				metricsLn.Close()
			}
			return nil, nil, nil, fmt.Errorf("record: %w", err)
		}
	}
	return metricsLn, recordFile, func() {
		if recordFile != nil {
			recordFile.Close()
		}
		if metricsLn != nil {
			metricsLn.Close()
		}
	}, nil
}

// recordWriter writes the input stream to file (nil: no recording).
func recordWriter(file *os.File, args redact.Policy, log *slog.Logger) (*record.Writer, error) {
	if file == nil {
		return nil, nil
	}
	rw, err := record.NewWriter(file)
	if err != nil {
		return nil, err
	}
	rw.SetArgs(args)
	log.Info("recording the input stream", "file", file.Name())
	return rw, nil
}

// sourceSet are the live sources besides the kernel.
type sourceSet struct {
	sources map[string]pipeline.Source
	// progress: the sources that report progress; the model waits for
	// them (and only for them), so how late each is does not change the
	// spans.
	progress    []string
	runtimeKick chan struct{}  // nil without the runtime
	runtimePoll chan struct{}  // nil without the runtime
	pace        *pipeline.Pace // of the runtime's and API server's progress reports
	seed        []fact.Input   // what the start already knows of them
	// wantEvents opens an event window on a pod the kubelet acted on
	// (watcher.Want); nil without the API server.
	wantEvents func(podUID string)
	// apiStats reads what the API source holds open on the API server;
	// nil without the API server.
	apiStats func() metrics.APIWatchStats
}

// collectors are the live sources' own metrics: what the API source holds
// open at the API server.
func (ls sourceSet) collectors() []prometheus.Collector {
	if ls.apiStats == nil {
		return nil
	}
	return []prometheus.Collector{metrics.NewAPIWatchCollector(ls.apiStats)}
}

// liveSources makes the runtime and API server sources the flags ask for,
// reporting the ones disabled or unavailable to health.
// Every source stamps its inputs with now (the tracer's timeline).
func liveSources(f *traceFlags, log *slog.Logger, health *metrics.Health, now func() time.Time) sourceSet {
	ls := sourceSet{sources: map[string]pipeline.Source{}, progress: []string{fact.SourceKernel},
		pace: pipeline.NewPace(progressEvery, progressQuiet)}
	if !f.noRuntime {
		// Each poll's changes, then the poll's time as the runtime's
		// progress. A container's end in the kernel brings the next poll
		// forward.
		ls.runtimeKick = make(chan struct{}, 1)
		ls.runtimePoll = make(chan struct{}, 1)
		ls.sources[pipeline.SourceRuntime] = pipeline.CRIWithClock(cri.WatchConfig{Endpoint: f.runtime, Logger: log,
			Kick: ls.runtimeKick, Poll: ls.runtimePoll}, ls.pace, now)
		ls.progress = append(ls.progress, fact.SourceRuntime)
	} else {
		health.SetReady(pipeline.SourceRuntime, false, "disabled by --no-runtime")
	}
	if f.noAPI {
		health.SetReady(pipeline.SourceAPI, false, "disabled by --no-api")
		return ls
	}
	w, err := apiWatcher(f, log, now)
	if err != nil {
		log.Warn("no API server: tracing from kernel and runtime facts only (traces are marked degraded)", "err", err)
		health.SetReady(pipeline.SourceAPI, false, err.Error())
		ls.seed = append(ls.seed, fact.Input{Time: now(), API: &fact.APIStatus{Available: false, Since: now(), Err: err.Error()}})
		return ls
	}
	// The watcher stamps each fact as it sends it: nothing in flight is
	// progress (less a margin for a fact stamped but not yet handed over).
	ls.sources[pipeline.SourceAPI] = pipeline.WithProgress(fact.SourceAPI, w.Run, ls.pace, 50*time.Millisecond, now)
	ls.progress = append(ls.progress, fact.SourceAPI)
	ls.wantEvents = w.Want
	ls.apiStats = func() metrics.APIWatchStats {
		st := w.Stats()
		return metrics.APIWatchStats{EventWatches: st.EventWatches, EventSweeps: st.EventSweeps, Unswept: st.Unswept, SweepsDeferred: st.SweepsDeferred,
			WindowLists: st.WindowLists, WindowsResumed: st.WindowsResumed, ResumesExpired: st.ResumesExpired,
			WindowListsFailed: st.WindowListsFailed, WindowListsCanceled: st.WindowListsCanceled,
			EndpointChanges: st.EndpointChanges, EndpointSliceErrors: st.EndpointSliceErrors}
	}
	return ls
}

// progressEvery is how often the runtime and API sources report progress
// while the model waits for it (see fact.Progress), progressQuiet how often
// otherwise (pipeline.Pace): the model's clock follows them only while it
// waits on it, and the switch to fast asks them at once.
const (
	progressEvery = 100 * time.Millisecond
	progressQuiet = time.Second
)

// apiWatcher is the API server source: this node's pods and their Events.
func apiWatcher(f *traceFlags, log *slog.Logger, now func() time.Time) (*watcher.Watcher, error) {
	client, err := watcher.NewClient(f.kubeconfig)
	if err != nil {
		return nil, err
	}
	return watcher.New(watcher.Config{Client: client, NodeName: f.node, PodLabels: f.podLabels, EventTTL: f.eventTTL,
		NoEndpointSlices: f.noSlices, Logger: log, Clock: now})
}

// runReplay feeds a recorded stream through the model.
func runReplay(path string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tracer replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	output := fs.String("output", "text", "text or json")
	verbose := fs.Bool("verbose", false, "show every span attribute")
	if err := fs.Parse(args); err != nil {
		return err
	}
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	r, err := record.NewReader(fh)
	if err != nil {
		return err
	}
	format, err := console.ParseFormat(*output)
	if err != nil {
		return err
	}
	pr := console.New(stdout, console.Config{Format: format, Verbose: *verbose})
	corr := correlate.New(correlate.Config{Sink: pr})
	n, rerr := 0, error(nil)
	for {
		in, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, record.ErrTornLine) {
			// A crash while recording: what came before is whole.
			fmt.Fprintf(stderr, "warning: %v; replaying the %d inputs before it\n", err, n)
			break
		}
		if err != nil {
			rerr = err // what was read is still replayed and flushed
			break
		}
		corr.Handle(in)
		n++
	}
	corr.Flush()
	pr.Close()
	st := corr.Stats()
	fmt.Fprintf(stderr, "replayed %d inputs: %d spans, correlation misses %v\n", n, st.SpansEmitted, st.Misses)
	return rerr
}

// LagBuckets and Lags make spanStats a metrics.SpanLags: the exporter's
// delivery lag histogram.
func (s spanStats) LagBuckets() []float64 { return otlp.LagBuckets }

func (s spanStats) Lags() map[string]metrics.SpanLag {
	in := s.e.Lags()
	out := make(map[string]metrics.SpanLag, len(in))
	for n, l := range in {
		out[n] = metrics.SpanLag{Buckets: l.Buckets, Count: l.Count, Sum: l.Sum}
	}
	return out
}
