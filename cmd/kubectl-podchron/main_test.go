package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/query"
	"github.com/podchron/podchron/internal/query/jaegertest"
	"github.com/podchron/podchron/internal/span"
)

// pod is a finished pod's trace: a start-up with a pull and a container
// run, the root (with its verdict) last.
func pod(uid, name string, t0 time.Time) []span.Span {
	tid := span.TraceIDForPod(uid)
	root := span.RootSpanID(tid)
	startup := span.SpanIDFor(tid, "startup")
	res := []span.Attr{
		span.String("k8s.pod.uid", uid), span.String("k8s.pod.name", name),
		span.String("k8s.namespace.name", "shop"), span.String("k8s.node.name", "worker-1"),
	}
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	return []span.Span{
		{TraceID: tid, SpanID: span.SpanIDFor(tid, "startup/pull/app"), Parent: startup, Name: "image.pull",
			Start: at(0.5), End: at(3.5), Resource: res},
		{TraceID: tid, SpanID: span.SpanIDFor(tid, "startup/start/app"), Parent: startup, Name: "container.start",
			Start: at(3.5), End: at(4.1), Resource: res},
		{TraceID: tid, SpanID: startup, Parent: root, Name: "pod.startup", Start: at(0), End: at(4), Resource: res},
		{TraceID: tid, SpanID: span.SpanIDFor(tid, "container/app/0/run"), Parent: root, Name: "container.run",
			Start: at(4), End: at(9), Resource: res, Attrs: []span.Attr{span.String("k8s.container.name", "app")}},
		{TraceID: tid, SpanID: root, Name: "pod", Start: at(0), End: at(10), Resource: res,
			Attrs: []span.Attr{span.String(verdictKey, "started in 4.0 s; long pole: image pull 3.0 s (75 %)")}},
	}
}

func runCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := run(ctx, args, &out, &errb)
	return out.String(), errb.String(), err
}

func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestAgainstJaeger(t *testing.T) {
	otlpAddr, url := jaegerTest(t)
	t0 := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	jaegertest.Export(t, otlpAddr, pod("uid-a", "web-0", t0))
	jaegertest.Export(t, otlpAddr, pod("uid-b", "web-0", t0.Add(20*time.Second)))
	id := span.TraceIDForPod("uid-a")
	waitFor(t, url, id, 5)
	waitFor(t, url, span.TraceIDForPod("uid-b"), 5)

	out, _, err := runCLI(t, "--uid", "uid-a", "--url", url)
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, out, "pod.startup", "image.pull", "container.run", "══ pod shop/web-0", "trace "+id.String(),
		"verdict: started in 4.0 s; long pole: image pull 3.0 s (75 %)")
	if strings.Contains(out, "late span") {
		t.Errorf("a span printed after its phase:\n%s", out)
	}
	if strings.Index(out, "verdict:") < strings.Index(out, "══ pod") {
		t.Errorf("verdict before the timeline:\n%s", out)
	}

	// Gone from the API server (no kubeconfig here): by name over --since,
	// the latest of two pods of that name.
	out, errOut, err := runCLI(t, "web-0", "-n", "shop", "--since", "1h", "--url", url,
		"--kubeconfig", filepath.Join(t.TempDir(), "none"))
	if err != nil {
		t.Fatal(err)
	}
	wantLines(t, out, "trace "+span.TraceIDForPod("uid-b").String(), "verdict: started in 4.0 s")
	wantLines(t, errOut, "2 pods named shop/web-0", "--uid uid-a")

	_, _, err = runCLI(t, "web-9", "-n", "shop", "--since", "1h", "--url", url, "--kubeconfig", filepath.Join(t.TempDir(), "none"))
	if err == nil || !strings.Contains(err.Error(), "no trace for pod shop/web-9") || !strings.Contains(err.Error(), "searched since") {
		t.Fatalf("unknown name: %v", err)
	}
	_, _, err = runCLI(t, "--uid", "uid-never", "--url", url)
	if !errors.Is(err, query.ErrNoTrace) || !strings.Contains(err.Error(), url) {
		t.Fatalf("unknown uid: %v", err)
	}
}

func TestWatchUntilRoot(t *testing.T) {
	otlpAddr, url := jaegerTest(t)
	spans := pod("uid-w", "web-1", time.Now().Add(-time.Minute))
	var out, errb bytes.Buffer
	var wg sync.WaitGroup
	var err error
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	wg.Go(func() {
		err = run(ctx, []string{"--uid", "uid-w", "--url", url, "--watch", "--interval", "100ms"}, &out, &errb)
	})
	time.Sleep(300 * time.Millisecond)
	jaegertest.Export(t, otlpAddr, spans[:4])
	time.Sleep(time.Second)
	jaegertest.Export(t, otlpAddr, spans[4:])
	wg.Wait()
	if err != nil || ctx.Err() != nil {
		t.Fatalf("watch: %v (ctx %v)\n%s", err, ctx.Err(), errb.String())
	}
	wantLines(t, errb.String(), "waiting for the trace of pod with UID uid-w")
	wantLines(t, out.String(), "pod.startup", "container.run", "══ pod shop/web-1", "verdict: started in 4.0 s")
}

func TestErrors(t *testing.T) {
	p := jaegertest.FreePorts(t, 1)
	url := "http://127.0.0.1:" + itoa(p[0])
	_, _, err := runCLI(t, "--uid", "x", "--url", url)
	if !errors.Is(err, query.ErrUnreachable) || !strings.Contains(err.Error(), url) {
		t.Fatalf("unreachable back end: %v", err)
	}
	t.Setenv(EnvURL, "")
	if _, _, err := runCLI(t, "--uid", "x"); err == nil || !strings.Contains(err.Error(), EnvURL) {
		t.Fatalf("no URL: %v", err)
	}
	if _, _, err := runCLI(t, "--uid", "x", "--url", url, "--backend", "zipkin"); err == nil {
		t.Fatal("zipkin accepted")
	}
	// A kubeconfig whose API server does not answer: the pod cannot be
	// looked up, and without --since that is the error.
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: " + url + "}}]\n" +
		"contexts: [{name: x, context: {cluster: c, user: u, namespace: shop}}]\ncurrent-context: x\nusers: [{name: u, user: {}}]\n"
	if err := os.WriteFile(kc, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runCLI(t, "web-0", "--url", url, "--kubeconfig", kc, "--request-timeout", "2s")
	if err == nil || !strings.Contains(err.Error(), "get pod shop/web-0") {
		t.Fatalf("API server down: %v", err)
	}
}

func jaegerTest(t *testing.T) (otlpAddr, url string) {
	t.Helper()
	t.Setenv(EnvURL, "")
	t.Setenv(EnvBackend, "")
	return jaegertest.Start(t)
}

// waitFor polls until Jaeger holds n spans of the trace.
func waitFor(t *testing.T, url string, id span.TraceID, n int) {
	t.Helper()
	c, err := query.New(query.Jaeger, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := c.Trace(context.Background(), id)
		if err == nil && len(got) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s: %d spans, want %d (%v)", id, len(got), n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
