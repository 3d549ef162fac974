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

	"github.com/podtrace/podtrace/internal/probe"
)

// runEvents prints raw kernel events as they happen: the probes' view alone.
func runEvents(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tracer events", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var roots, cniDirs, comms listFlag
	output := fs.String("output", "text", "event output: text, json, or none (decode and count only)")
	mode := fs.String("cgroup-mode", "auto", "cgroup ids to use: auto, v2 or v1")
	ringSize := fs.Int("ringbuf-size", 4<<20, "ring buffer size in bytes (power of two)")
	allSignals := fs.Bool("all-signals", false, "also report noisy signals (SIGCHLD, SIGURG, SIGWINCH, ...)")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	fs.Var(&roots, "cgroup-root", "watched cgroup subtree, relative to the hierarchy root (repeatable; default /kubepods and /kubepods.slice)")
	fs.Var(&cniDirs, "cni-bin-dir", "directory holding CNI plugins (repeatable; default /opt/cni/bin, /usr/lib/cni, ...)")
	fs.Var(&comms, "runtime-comm", "comm prefix of a container runtime process (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lvl}))
	slog.SetDefault(log)

	var print func(probe.Event) error
	switch *output {
	case "text":
		print = func(ev probe.Event) error { _, err := fmt.Fprintln(stdout, probe.Format(ev)); return err }
	case "json":
		enc := probe.NewJSONEncoder(stdout)
		print = enc.Encode
	case "none":
		print = func(probe.Event) error { return nil }
	default:
		return fmt.Errorf("--output %q: want text, json or none", *output)
	}

	cfg, err := probeConfig(log, roots, cniDirs, comms, *mode, *ringSize)
	if err != nil {
		return err
	}
	if *allSignals {
		cfg.SignalMask = ^uint64(0)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if *duration > 0 {
		var c2 context.CancelFunc
		ctx, c2 = context.WithTimeout(ctx, *duration)
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
		if err := print(ev); err != nil {
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
	for _, t := range probe.EventTypes() {
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
