package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/fact/kernel"

	"github.com/podchron/podchron/internal/record"

	"github.com/podchron/podchron/internal/probe"
)

// runEvents prints raw kernel events as they happen: the probes' view alone.
func runEvents(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tracer events", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f probeFlags
	output := fs.String("output", "text", "event output: text, json, or none (decode and count only)")
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (see tracer events -h)", fs.Arg(0))
	}
	log, err := f.logger(stderr)
	if err != nil {
		return err
	}
	var emit func(kernel.Event) error
	switch *output {
	case "text":
		emit = func(ev kernel.Event) error { _, err := fmt.Fprintln(stdout, kernel.Format(ev)); return err }
	case "json":
		enc := kernel.NewJSONEncoder(stdout)
		emit = enc.Encode
	case "none":
		emit = func(kernel.Event) error { return nil }
	default:
		return fmt.Errorf("--output %q: want text, json or none", *output)
	}
	cfg, err := f.probeConfig(log)
	if err != nil {
		return err
	}
	argsPolicy, err := f.argsPolicy()
	if err != nil {
		return err
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if f.duration > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, f.duration)
		defer c2()
	}

	p, src, closeProbes, err := loadProbes(cfg, log)
	if err != nil {
		return err
	}
	defer closeProbes()

	var received uint64
	for {
		ev, err := src.Next(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, io.EOF) {
				log.Debug("event stream ended", "err", err)
				break
			}
			return err
		}
		received++
		if err := emit(record.RedactInput(fact.Input{Kernel: ev}, argsPolicy).Kernel); err != nil {
			return fmt.Errorf("write event: %w", err)
		}
	}
	return report(p, src, received, log)
}

func report(p *probe.Probes, src *probe.RingSource, received uint64, log *slog.Logger) error {
	c, err := p.Counters()
	if err != nil {
		return err
	}
	var lost uint64
	attrs := []any{}
	for _, t := range kernel.EventTypes() {
		attrs = append(attrs, t.String(), fmt.Sprintf("%d/%d", c[t].Emitted, c[t].Lost))
		lost += c[t].Lost
	}
	attrs = append(attrs, "received", received, "decode_errors", src.DecodeErrors.Load())
	log.Info("event counters (emitted/lost)", attrs...)
	if lost > 0 {
		log.Warn("events were lost: the ring buffer was full", "lost", lost)
	}
	return nil
}
