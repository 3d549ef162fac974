// Command kubectl-podchron is the kubectl plugin that prints one pod's
// lifecycle as podchron traced it: the pod's trace, fetched from the trace
// back end (Jaeger's api/v3 or Tempo), as the console timeline the tracer
// prints, followed by the verdict.
//
//	kubectl podchron POD [-n NAMESPACE]          a pod that exists now
//	kubectl podchron --uid UID                   a pod already gone, by UID
//	kubectl podchron POD --since 2h [-n NS]      a pod already gone, by name
//	kubectl podchron POD --watch                 follow a pod starting or terminating
//
// The back end is --backend jaeger|tempo at --url (default
// $PODCHRON_TRACES_URL, $PODCHRON_TRACES_BACKEND).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/podchron/podchron/internal/export/console"
	"github.com/podchron/podchron/internal/query"
)

var version = "dev"

// Environment variables that give the flags' defaults.
const (
	EnvURL     = "PODCHRON_TRACES_URL"
	EnvBackend = "PODCHRON_TRACES_BACKEND"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, pflag.ErrHelp):
	case err != nil:
		fmt.Fprintln(os.Stderr, "kubectl-podchron:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	kubeconfig, context, namespace string
	backend, url                   string
	uid                            string
	since                          time.Duration
	watch                          bool
	interval, timeout              time.Duration
	output                         string
	verbose, version               bool
	pod                            string
}

func parse(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := pflag.NewFlagSet("kubectl podchron", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&o.context, "context", "", "the kubeconfig context to use")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "the pod's namespace (default: the context's)")
	fs.StringVar(&o.backend, "backend", envOr(EnvBackend, string(query.Jaeger)), "trace back end: jaeger (api/v3) or tempo (env "+EnvBackend+")")
	fs.StringVar(&o.url, "url", os.Getenv(EnvURL), "the back end's query URL, e.g. http://jaeger-query:16686 (env "+EnvURL+")")
	fs.StringVar(&o.uid, "uid", "", "the pod's UID (for a pod already gone)")
	fs.DurationVar(&o.since, "since", 0, "for a pod not in the API server: search the back end by name over this long, e.g. 2h")
	fs.BoolVarP(&o.watch, "watch", "w", false, "follow the pod: print its spans as they arrive, until its root span arrives (or ctrl-C)")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "how often --watch polls the back end")
	fs.DurationVar(&o.timeout, "request-timeout", 30*time.Second, "timeout of one request to the API server or the back end")
	fs.StringVarP(&o.output, "output", "o", "text", "text (the timeline) or json (one span per line)")
	fs.BoolVarP(&o.verbose, "verbose", "v", false, "every span attribute in the timeline")
	fs.BoolVar(&o.version, "version", false, "print the version")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.version {
		return o, nil
	}
	switch fs.NArg() {
	case 0:
		if o.uid == "" {
			fs.Usage()
			return nil, errors.New("name a pod, or give --uid")
		}
	case 1:
		o.pod = fs.Arg(0)
	default:
		return nil, fmt.Errorf("one pod at a time (got %d names)", fs.NArg())
	}
	if o.url == "" {
		return nil, fmt.Errorf("no trace back end: give --url or set %s", EnvURL)
	}
	return o, nil
}

const usage = `kubectl podchron: one pod's lifecycle, as podchron traced it.

Usage:
  kubectl podchron POD [-n NAMESPACE]        a pod that exists now
  kubectl podchron --uid UID                 a pod already gone, by UID
  kubectl podchron POD --since 2h            a pod already gone, by name (searches the back end)
  kubectl podchron POD --watch               follow a pod that is starting or terminating

Flags:
`

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if o.version {
		fmt.Fprintf(stdout, "kubectl-podchron %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		return nil
	}
	kind, err := query.ParseKind(o.backend)
	if err != nil {
		return err
	}
	format, err := console.ParseFormat(o.output)
	if err != nil {
		return err
	}
	qc, err := query.New(kind, o.url, nil)
	if err != nil {
		return err
	}
	c := &cli{o: o, q: qc, out: stdout, errw: stderr, format: format}
	target, err := c.resolve(ctx)
	if err != nil {
		return err
	}
	if o.watch {
		return c.watch(ctx, target)
	}
	return c.show(ctx, target)
}
