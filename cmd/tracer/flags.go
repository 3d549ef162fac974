package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/podchron/podchron/internal/cgroupfs"
	"github.com/podchron/podchron/internal/probe"
	"github.com/podchron/podchron/internal/redact"
)

// benchNoopEnv, set to 1, makes every BPF program return at once (nothing is
// traced): the in-kernel floor that bench/execstorm.sh compares against.
// Benchmark only; not a flag, so it does not show in -h.
const benchNoopEnv = "PODCHRON_BENCH_NOOP_PROGRAMS"

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// probeFlags are the flags every mode that loads the probes takes (the
// daemon, record and events): one definition, one help text.
type probeFlags struct {
	roots      listFlag
	cniDirs    listFlag
	comms      listFlag
	mode       string
	ringSize   int
	allSignals bool
	allProcs   bool
	duration   time.Duration
	args       string
	sigRate    int
	sigBurst   int
	logFlags
}

func (f *probeFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.roots, "cgroup-root", "watched cgroup subtree, relative to the hierarchy root (repeatable; default /kubepods and /kubepods.slice)")
	fs.Var(&f.cniDirs, "cni-bin-dir", "directory holding CNI plugins (repeatable; default /opt/cni/bin, /usr/lib/cni, ...)")
	fs.Var(&f.comms, "runtime-comm", "comm prefix of a container runtime process (repeatable; default containerd-shim, runc, crun, conmon, ...)")
	fs.StringVar(&f.mode, "cgroup-mode", "auto", "cgroup ids to use: auto, v2 or v1")
	// 2 MiB: the daemon with --all-processes at this machine's maximum exec
	// storm lost nothing (bench/execstorm.sh); the kernel maps its data pages
	// twice, so each MiB here is 2 MiB of the tracer's RSS.
	fs.IntVar(&f.ringSize, "ringbuf-size", probe.DefaultRingBufferBytes, "kernel ring buffer size in bytes (power of two)")
	fs.BoolVar(&f.allSignals, "all-signals", false, "also report noisy signals (SIGCHLD, SIGURG, SIGWINCH, SIGPROF, SIGALRM, SIGIO, ...)")
	fs.BoolVar(&f.allProcs, "all-processes", false, "report every process of a watched cgroup, not only the roots of its process tree (inits, exec sessions, the runtime's set-up): what a container's own processes fork and exec below them costs a ring-buffer record each")
	fs.IntVar(&f.sigRate, "signal-rate", probe.DefaultSignalRate, "each container cgroup's budget for signal records, per second (signals sent or received by a pod's tasks beyond it are counted on the pod, not recorded; -1: no budget)")
	fs.IntVar(&f.sigBurst, "signal-burst", probe.DefaultSignalBurst, "signal records a container cgroup may make at once, above --signal-rate")
	fs.DurationVar(&f.duration, "duration", 0, "stop after this long (0: until SIGINT/SIGTERM)")
	fs.StringVar(&f.args, "command-args", "redacted", "what of a command line leaves the tracer (spans, console, JSON, events, record files): none, argv0, redacted (secret-looking values masked) or full")
	f.logFlags.register(fs)
}

// probeConfig builds the probes' settings. Every value is checked here,
// before anything is loaded into the kernel.
func (f *probeFlags) probeConfig(log *slog.Logger) (probe.Config, error) {
	cfg := probe.DefaultConfig()
	cfg.Logger = log
	cfg.RingBufferBytes = f.ringSize
	if len(f.roots) > 0 {
		cfg.CgroupRoots = f.roots
	}
	if len(f.cniDirs) > 0 {
		cfg.CNIDirs = nil
		for _, d := range f.cniDirs {
			cfg.CNIDirs = append(cfg.CNIDirs, strings.TrimSuffix(d, "/")+"/")
		}
	}
	if len(f.comms) > 0 {
		cfg.RuntimeComms = f.comms
	}
	m, err := cgroupfs.ParseMode(f.mode)
	if err != nil {
		return cfg, fmt.Errorf("--cgroup-mode: %w", err)
	}
	cfg.CgroupMode = m
	if f.allSignals {
		cfg.SignalMask = ^uint64(0)
	}
	cfg.AllProcesses = f.allProcs
	if f.sigRate == 0 || f.sigBurst <= 0 {
		return cfg, fmt.Errorf("--signal-rate %d --signal-burst %d: the rate must be positive (or -1: no budget), the burst positive", f.sigRate, f.sigBurst)
	}
	cfg.SignalRate, cfg.SignalBurst = f.sigRate, f.sigBurst
	if f.duration < 0 {
		return cfg, fmt.Errorf("--duration %s: must not be negative", f.duration)
	}
	// Benchmark only, deliberately not a flag: bench/execstorm.sh's "floor"
	// mode loads the same programs, returning at once.
	cfg.NoopPrograms = os.Getenv(benchNoopEnv) == "1"
	if err := cfg.Check(); err != nil {
		return cfg, fmt.Errorf("probe settings: %w", err)
	}
	return cfg, nil
}

// logFlags choose the log's level and format.
type logFlags struct {
	logLevel  string
	logFormat string
}

func (f *logFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json (one object per line)")
}

// logger builds the process's logger and makes it the default, and routes
// client-go's klog output through it, so every line has one format.
func (f *logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	var h slog.Handler
	switch f.logFormat {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", f.logFormat)
	}
	log := slog.New(h)
	slog.SetDefault(log)
	klog.SetSlogLogger(log.With("component", "client-go"))
	return log, nil
}

// argsPolicy is --command-args, checked.
func (f *probeFlags) argsPolicy() (redact.Policy, error) { return redact.Parse(f.args) }
