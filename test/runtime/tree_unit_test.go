package runtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

// treeFixture is a small pod trace: root, sandbox with two CNI runs (in
// the given order), a run with a signal event.
func treeFixture(pid int64, cause string, cniOrder ...string) []span.Span {
	tr := span.TraceIDForPod("uid-" + cause)
	id := func(k string) span.SpanID { return span.SpanIDFor(tr, k) }
	t0 := time.Unix(int64(pid), 0)
	spans := []span.Span{
		{TraceID: tr, SpanID: id("root"), Name: names.SpanPod, Start: t0, End: t0.Add(time.Second), Status: span.StatusOK},
		{TraceID: tr, SpanID: id("sandbox"), Parent: id("root"), Name: names.SpanPodSandbox, Start: t0, Status: span.StatusOK,
			Attrs: []span.Attr{span.String(names.ContainerID, "abc"+cause)}},
		{TraceID: tr, SpanID: id("run"), Parent: id("root"), Name: names.SpanContainerRun, Start: t0, Status: span.StatusError,
			StatusMessage: "SIGKILL 2.0s after SIGTERM",
			Attrs: []span.Attr{span.String(names.ExitCause, cause), span.Int(names.ProcessPID, pid),
				span.String(names.SignalSenderComm, "runc"), span.String(names.SignalSenderKind, "runtime")},
			Events: []span.SpanEvent{{Name: "signal SIGTERM", Time: t0.Add(time.Millisecond),
				Attrs: []span.Attr{span.Int(names.SignalSenderPID, pid+1), span.String(names.SignalSenderKind, "runtime")}}}},
	}
	for _, p := range cniOrder {
		spans = append(spans, span.Span{TraceID: tr, SpanID: id("cni/" + p), Parent: id("sandbox"), Name: "cni.ADD " + p,
			Start: t0, Status: span.StatusOK, Attrs: []span.Attr{span.String(names.CNIPlugin, p),
				span.Int(names.ProcessPID, pid+7), span.Int(names.ProcessExitCode, 0)}})
	}
	return spans
}

func TestSpanTreeNormalization(t *testing.T) {
	a := renderTree(spanTree(treeFixture(100, "killed_by_runtime", "bridge", "loopback")))
	b := renderTree(spanTree(treeFixture(2000, "killed_by_runtime", "loopback", "bridge")))
	if a != b {
		t.Fatalf("same story, different pids, ids and CNI order: trees differ:\n%s", lineDiff(a, b))
	}
	for _, gone := range []string{names.ProcessPID, names.ContainerID, ".comm", "2.0"} {
		if strings.Contains(a, gone) {
			t.Errorf("tree keeps %q:\n%s", gone, a)
		}
	}
	want := `pod [ok]
  container.run [error: SIGKILL Ns after SIGTERM] podchron.exit.cause=killed_by_runtime podchron.signal.sender.kind=runtime
      • signal SIGTERM podchron.signal.sender.kind=runtime
  pod.sandbox [ok]
    cni.ADD bridge [ok] podchron.cni.plugin=bridge process.exit.code=0
    cni.ADD loopback [ok] podchron.cni.plugin=loopback process.exit.code=0
`
	if a != want {
		t.Errorf("tree:\n%s\nwant:\n%s", a, want)
	}
	c := renderTree(spanTree(treeFixture(100, "oom_killed", "bridge")))
	d := lineDiff(a, c)
	if !strings.Contains(d, "- "+"  container.run [error: SIGKILL Ns after SIGTERM] podchron.exit.cause=killed_by_runtime") ||
		!strings.Contains(d, "+ "+"  container.run [error: SIGKILL Ns after SIGTERM] podchron.exit.cause=oom_killed") ||
		!strings.Contains(d, "-     cni.ADD loopback") || !strings.Contains(d, "  pod [ok]") {
		t.Errorf("diff:\n%s", d)
	}
}
