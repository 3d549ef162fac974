// Command tracer is podtrace's node daemon and CLI.
//
//	tracer [flags]              trace this node: one trace per pod lifecycle
//	                            (console timeline, or OTLP when OTEL_EXPORTER_OTLP_*
//	                            is set), Prometheus metrics on --metrics-addr
//	tracer record FILE [flags]  the same, also writing the input stream to FILE
//	tracer replay FILE [flags]  feed a recorded stream through the model offline
//	tracer events [flags]       raw kernel events as they happen
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/podtrace/podtrace/internal/cgroupfs"
	"github.com/podtrace/podtrace/internal/probe"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tracer:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "events":
			return runEvents(args[1:], stdout, stderr)
		case "record":
			if len(args) < 2 || strings.HasPrefix(args[1], "-") {
				return fmt.Errorf("usage: tracer record FILE [flags]")
			}
			return runTrace(args[2:], args[1], stdout, stderr)
		case "replay":
			if len(args) < 2 || strings.HasPrefix(args[1], "-") {
				return fmt.Errorf("usage: tracer replay FILE [flags]")
			}
			return runReplay(args[1], args[2:], stdout, stderr)
		case "help", "-h", "--help":
			fmt.Fprint(stdout, usage)
			return nil
		}
	}
	return runTrace(args, "", stdout, stderr)
}

// probeConfig builds the probes' settings from the flags both the daemon
// and `tracer events` take.
func probeConfig(log *slog.Logger, roots, cniDirs, comms []string, mode string, ringSize int) (probe.Config, error) {
	cfg := probe.DefaultConfig()
	cfg.Logger = log
	cfg.RingBufferBytes = ringSize
	if len(roots) > 0 {
		cfg.CgroupRoots = roots
	}
	if len(cniDirs) > 0 {
		cfg.CNIDirs = nil
		for _, d := range cniDirs {
			cfg.CNIDirs = append(cfg.CNIDirs, strings.TrimSuffix(d, "/")+"/")
		}
	}
	if len(comms) > 0 {
		cfg.RuntimeComms = comms
	}
	m, err := cgroupfs.ParseMode(mode)
	if err != nil {
		return cfg, err
	}
	cfg.CgroupMode = m
	return cfg, nil
}

// loadProbes loads and attaches the probes and opens their ring buffer.
// The returned close undoes both.
func loadProbes(cfg probe.Config, log *slog.Logger, attrs ...any) (*probe.Probes, *probe.RingSource, func(), error) {
	p, err := probe.Load(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	src, err := p.NewSource()
	if err != nil {
		p.Close()
		return nil, nil, nil, err
	}
	l := p.Layout()
	log.Info("probes attached", append([]any{"cgroup_mode", l.Mode.String(), "cgroup_mount", l.Mount(), "roots", cfg.CgroupRoots}, attrs...)...)
	return p, src, func() { src.Close(); p.Close() }, nil
}

const usage = `tracer: podtrace's node daemon.

  tracer [flags]              trace this node: one trace per pod lifecycle
  tracer record FILE [flags]  trace, and write the input stream to FILE
  tracer replay FILE [flags]  feed a recorded stream through the model offline
  tracer events [flags]       raw kernel events as they happen

'tracer -h', 'tracer events -h' list the flags.
`
