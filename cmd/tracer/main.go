// Command tracer is podchron's node daemon and CLI.
//
//	tracer [flags]              trace this node: one trace per pod lifecycle
//	                            (console timeline, or OTLP when OTEL_EXPORTER_OTLP_*
//	                            is set), Prometheus metrics on --metrics-addr
//	tracer record FILE [flags]  the same, also writing the input stream to FILE
//	tracer replay FILE [flags]  feed a recorded stream through the model offline
//	tracer events [flags]       raw kernel events as they happen
//	tracer version              the build's version
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/podchron/podchron/internal/probe"
)

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
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
		case "version", "--version":
			fmt.Fprintf(stdout, "tracer %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		case "help", "-h", "-help", "--help":
			fmt.Fprint(stdout, usage)
			fmt.Fprintln(stdout, "\nFlags of tracer and tracer record:")
			fs := flag.NewFlagSet("tracer", flag.ContinueOnError)
			new(traceFlags).register(fs)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil
		}
	}
	return runTrace(args, "", stdout, stderr)
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
	// Loading left garbage (the kernel's BTF and the BPF object, parsed):
	// back to the kernel now, not after the runtime's first periodic GC two
	// minutes on: ~6 MiB of RSS (bench/memory.sh).
	debug.FreeOSMemory()
	return p, src, func() { src.Close(); p.Close() }, nil
}

const usage = `tracer: podchron's node daemon.

  tracer [flags]              trace this node: one trace per pod lifecycle
  tracer record FILE [flags]  trace, and write the input stream to FILE
  tracer replay FILE [flags]  feed a recorded stream through the model offline
  tracer events [flags]       raw kernel events as they happen
  tracer version              the build's version

'tracer events -h' and 'tracer replay FILE -h' list their flags. Every flag
and the OTLP settings (OTEL_EXPORTER_OTLP_*) are checked before the probes
are loaded.
`
