package e2e

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/span"
	"github.com/podchron/podchron/test/e2e/backends"
)

// ---- 52: kubectl podchron against the cluster's Jaeger ----------------------

// verdictKey is the root span's verdict in plain words (podchron.verdict).
const verdictKey = "podchron.verdict"

var (
	pluginOnce sync.Once
	pluginBin  string
	pluginErr  error
)

// kubectlPodchron builds cmd/kubectl-podchron once (as make build does) and
// returns its path.
func (e *env) kubectlPodchron(t *testing.T) string {
	t.Helper()
	pluginOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			goBin = "/usr/local/go/bin/go"
		}
		pluginBin = filepath.Join(e.work, "kubectl-podchron")
		out, err := runCmd(e.ctx, e.repo, []string{"CGO_ENABLED=0"}, goBin, "build", "-o", pluginBin, "./cmd/kubectl-podchron")
		if err != nil {
			pluginErr = fmt.Errorf("go build ./cmd/kubectl-podchron: %w\n%s", err, out)
		}
	})
	if pluginErr != nil {
		t.Fatal(pluginErr)
	}
	return pluginBin
}

// podchronCLI runs kubectl-podchron against the cluster's kubeconfig and
// Jaeger's query API; it returns stdout and stderr.
func (e *env) podchronCLI(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	bin := e.kubectlPodchron(t)
	ctx, cancel := context.WithTimeout(e.ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", e.cluster.Kubeconfig,
		"--backend", "jaeger"}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// printed checks that the plugin's output holds every piece of text.
func printed(out string, want ...string) error {
	for _, w := range want {
		if !strings.Contains(out, w) {
			return fmt.Errorf("output lacks %q", w)
		}
	}
	return nil
}

func (e *env) kubectlPodchronPlugin(t *testing.T) {
	t.Parallel()
	// Built first: under load the build takes minutes, which must not eat
	// the time the checks below allow.
	e.kubectlPodchron(t)
	const ns = "s52-kubectl-podchron"
	e.namespace(t, ns)
	pod := e.readyPod(t, ns, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "shown"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			container("app", sh(`trap 'exit 0' TERM; while :; do sleep 1 & wait $!; done`)...)}}})
	tid := span.TraceIDForPod(string(pod.UID)).String()
	url := e.jaeger.Query

	// A live pod, by name: its start-up so far, no root yet.
	var out string
	e.eventually(t, "kubectl podchron "+pod.Name+" (live)", time.Minute, func() error {
		stdout, stderr, err := e.podchronCLI(t, pod.Name, "-n", ns, "--url", url)
		out = stdout
		if err != nil {
			return fmt.Errorf("%w: %s", err, stderr)
		}
		if err := printed(stdout, "── pod "+ns+"/"+pod.Name+" · "+names.SpanPodStartup, "trace "+tid,
			names.SpanPodSandbox, names.SpanContainerStart, "(no root span yet"); err != nil {
			// The whole output, and what the model counted as not
			// emitted: a missing span's reason (a failed run keeps it).
			return fmt.Errorf("%w\n%s\n%s", err, stdout, e.misses())
		}
		return nil
	})
	t.Logf("kubectl podchron %s (live):\n%s", pod.Name, out)

	e.deleteAndWait(t, ns, pod.Name)
	tr := e.trace(t, string(pod.UID), time.Minute, func(tr *backends.Trace) error {
		_, err := only(tr, names.SpanPod)
		return err
	})
	root, _ := only(tr, names.SpanPod)

	// The pod is gone: by UID, the whole timeline and the verdict.
	stdout, stderr, err := e.podchronCLI(t, "--uid", string(pod.UID), "--url", url)
	t.Logf("kubectl podchron --uid %s:\n%s%s", pod.UID, stdout, stderr)
	if err != nil {
		t.Fatalf("kubectl podchron --uid: %v: %s", err, stderr)
	}
	if err := printed(stdout, "trace "+tid, names.SpanPodStartup, names.SpanPodSandbox, names.SpanContainerStart,
		names.SpanContainerRun, names.SpanContainerStop, names.SpanPodTermination, "══ pod "+ns+"/"+pod.Name+" · "+names.SpanPod); err != nil {
		t.Error(err)
	}
	if strings.Contains(stdout, "no root span yet") {
		t.Error("the root printed as missing")
	}
	verdict := root.Str(verdictKey)
	if verdict == "" {
		t.Errorf("the root span carries no %s (tags %v)", verdictKey, root.Tags)
	}
	if err := printed(stdout, "\nverdict: "+verdict+"\n"); err != nil || strings.Index(stdout, "verdict:") < strings.Index(stdout, "══ pod") {
		t.Errorf("verdict line: want %q after the timeline: %v", "verdict: "+verdict, err)
	}

	// By name, gone from the API server: found by searching Jaeger.
	stdout, stderr, err = e.podchronCLI(t, pod.Name, "-n", ns, "--since", "1h", "--url", url)
	if err != nil || printed(stdout, "trace "+tid, "══ pod "+ns+"/"+pod.Name) != nil {
		t.Errorf("kubectl podchron %s --since 1h: %v\n%s%s", pod.Name, err, stdout, stderr)
	}

	// Clear errors: the pod not found without --since; the back end down.
	_, stderr, err = e.podchronCLI(t, pod.Name, "-n", ns, "--url", url)
	if err == nil || !strings.Contains(stderr, `pod "shown" not found in namespace "`+ns+`"`) {
		t.Errorf("a gone pod without --since: %v: %s", err, stderr)
	}
	const down = "http://127.0.0.1:1"
	_, stderr, err = e.podchronCLI(t, "--uid", string(pod.UID), "--url", down)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !strings.Contains(stderr, "trace back end unreachable: "+down) {
		t.Errorf("back end down: %v: %s", err, stderr)
	}
}
