package console

import (
	"math"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// at is t0 plus sec seconds, rounded to the microsecond (no float noise in
// the golden files).
func at(sec float64) time.Time {
	return t0.Add(time.Duration(math.Round(sec*1e6)) * time.Microsecond)
}

// spanBuilder builds one pod's spans with ids from stable keys, the way the
// correlator does.
type spanBuilder struct {
	tid span.TraceID
	res []span.Attr
}

func newPod(uid, ns, name, node string) *spanBuilder {
	return &spanBuilder{
		tid: span.TraceIDForPod(uid),
		res: []span.Attr{
			span.String(names.K8sPodUID, uid),
			span.String(names.K8sPodName, name),
			span.String(names.K8sNamespaceName, ns),
			span.String(names.K8sNodeName, node),
		},
	}
}

func (b *spanBuilder) id(key string) span.SpanID { return span.SpanIDFor(b.tid, key) }

func (b *spanBuilder) span(key, parent, name string, start, end float64, st span.Status, attrs ...span.Attr) span.Span {
	s := span.Span{
		TraceID: b.tid, SpanID: b.id(key), Name: name,
		Start: at(start), End: at(end), Status: st, Attrs: attrs, Resource: b.res,
	}
	if parent != "" {
		s.Parent = b.id(parent)
	}
	return s
}

func ev(name string, sec float64, attrs ...span.Attr) span.SpanEvent {
	return span.SpanEvent{Name: name, Time: at(sec), Attrs: attrs}
}

// lifecycle is a realistic emission order for two pods on one node: web
// starts (scheduling, sandbox with 3 CNI ADDs, init container, image pull,
// app start, postStart, readiness probes), runs, and is deleted: preStop,
// SIGTERM ignored, SIGKILL at the end of the grace period (overrun), CNI
// DEL. A second pod, seen from mid-life with a degraded source, completes
// in between.
func lifecycle() []span.Span {
	web := newPod("6f1c2e3a-0b1d-4c5e-8f90-a1b2c3d4e5f6", "default", "web-7d4b9c8f6-x2k9p", "worker-1")
	dns := newPod("0c9d8e7f-1111-2222-3333-444455556666", "kube-system", "coredns-5d78c9869d-4kq2z", "worker-1")
	ok, unset, bad := span.StatusOK, span.StatusUnset, span.StatusError
	S, I, B := span.String, span.Int, span.Bool
	app := S(names.K8sContainerName, "app")
	appID := S(names.ContainerID, "3f9a1c2b7d8e4f60a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718")

	var out []span.Span
	add := func(s span.Span) { out = append(out, s) }

	// --- web: startup, children first ---
	add(web.span("startup/scheduling", "startup", names.SpanPodScheduling, 0, 0.045, ok))
	for i, c := range []struct {
		plugin     string
		start, end float64
		pid        int64
	}{{"bridge", 0.420, 0.468, 31337}, {"portmap", 0.470, 0.492, 31352}, {"bandwidth", 0.494, 0.505, 31360}} {
		add(web.span("startup/sandbox/cni/"+c.plugin, "startup/sandbox", "cni.ADD "+c.plugin, c.start, c.end, ok,
			S(names.CNIPlugin, c.plugin), S(names.CNICommand, "ADD"),
			I(names.ProcessExitCode, 0), I(names.ProcessPID, c.pid+int64(i)),
			span.Strings(names.ProcessCommandArgs, "/opt/cni/bin/"+c.plugin)))
	}
	add(web.span("startup/sandbox", "startup", names.SpanPodSandbox, 0.060, 0.910, ok))
	add(web.span("container/init-db/0/init", "startup", names.SpanContainerInit, 0.920, 1.900, ok,
		S(names.K8sContainerName, "init-db"), I(names.ProcessPID, 31410),
		span.Strings(names.ProcessCommandArgs, "sh", "-c", "until nc -z db 5432; do sleep 0.2; done"),
		I(names.ProcessExitCode, 0), S(names.ExitCause, "completed")))
	add(web.span("container/app/0/pull", "startup", names.SpanContainerImagePull, 1.910, 2.950, ok, app))
	add(web.span("container/app/0/start", "startup", names.SpanContainerStart, 2.960, 3.120, ok, app, appID, I(names.ProcessPID, 31502)))
	add(web.span("container/app/0/poststart", "startup", names.SpanContainerPostStart, 3.120, 3.400, ok, app,
		span.Strings(names.ProcessCommandArgs, "/bin/warmup", "--cache")))
	p1 := web.span("container/app/0/probe/readiness/1", "startup", "probe.readiness", 4.000, 4.015, bad, app,
		S(names.ProbeType, "readiness"), S(names.ProbeResult, "failure"))
	p1.StatusMessage = "HTTP probe failed with statuscode: 503"
	add(p1)
	add(web.span("container/app/0/probe/readiness/2", "startup", "probe.readiness", 6.000, 6.012, ok, app,
		S(names.ProbeType, "readiness"), S(names.ProbeResult, "success")))
	add(web.span("startup", "root", names.SpanPodStartup, 0, 6.012, ok))

	// --- dns: observed from mid-life, completes ---
	dnsRun := dns.span("container/coredns/2/run", "root", names.SpanContainerRun, 100, 130.25, ok,
		S(names.K8sContainerName, "coredns"), I(names.ProcessPID, 2877), I(names.ProcessExitCode, 0),
		S(names.ExitCause, "completed"), I(names.K8sContainerRestartCount, 2))
	add(dnsRun)
	dnsRoot := dns.span("root", "", "pod", 100, 130.5, unset,
		S(names.ObservedFrom, "2026-03-01T10:01:40Z"), S(names.Degraded, "api server unreachable for 4s"),
		I(names.EventsLost, 17))
	dnsRoot.StatusMessage = "unfinished: observed from mid-life"
	add(dnsRoot)

	// --- web: termination, children first ---
	add(web.span("termination/prestop/app", "termination", names.SpanContainerPreStop, 600.010, 605.020, ok, app,
		span.Strings(names.ProcessCommandArgs, "sleep", "5"), I(names.ProcessExitCode, 0)))
	stop := web.span("termination/stop/app", "termination", names.SpanContainerStop, 605.020, 630.012, bad, app,
		S(names.SignalName, "SIGTERM"), S(names.SignalDisposition, "ignored"),
		S(names.SignalSenderKind, "runtime"), S(names.SignalSenderComm, "containerd-shim"),
		I(names.SignalSenderPID, 2211),
		I(names.GracePeriodSeconds, 30), B(names.GracePeriodOverrun, true), B(names.Sigkill, true),
		I(names.ProcessExitCode, 137), S(names.ExitCause, "killed_by_runtime"))
	stop.StatusMessage = "grace period overrun: SIGKILL after 30s"
	stop.Events = []span.SpanEvent{
		ev("SIGTERM", 605.020, S(names.SignalName, "SIGTERM"), S(names.SignalDisposition, "ignored"),
			S(names.SignalSenderKind, "runtime"), S(names.SignalSenderComm, "containerd-shim"),
			I(names.SignalSenderPID, 2211)),
		ev("SIGKILL", 630.000, S(names.SignalName, "SIGKILL"), S(names.SignalDisposition, "default"),
			S(names.SignalSenderKind, "runtime"), S(names.SignalSenderComm, "containerd-shim"),
			I(names.SignalSenderPID, 2211)),
		ev("exit", 630.012, I(names.ProcessExitCode, 137), I(names.ProcessPID, 31502)),
	}
	add(stop)
	add(web.span("termination", "root", names.SpanPodTermination, 600.000, 630.012, bad,
		I(names.GracePeriodSeconds, 30), B(names.GracePeriodOverrun, true)))
	add(web.span("container/app/0/run", "root", names.SpanContainerRun, 3.120, 630.012, unset, app, appID,
		I(names.ProcessPID, 31502), I(names.ProcessExitCode, 137), S(names.ExitCause, "killed_by_runtime"),
		S(names.SignalName, "SIGKILL"), I(names.K8sContainerRestartCount, 0)))
	add(web.span("cleanup/cni/bridge", "cleanup", "cni.DEL bridge", 630.100, 630.131, ok,
		S(names.CNIPlugin, "bridge"), S(names.CNICommand, "DEL"), I(names.ProcessExitCode, 0),
		I(names.ProcessPID, 32001)))
	add(web.span("cleanup", "root", names.SpanPodCleanup, 630.020, 630.480, ok))
	root := web.span("root", "", "pod", 0, 630.480, bad,
		S(names.ExitCause, "killed_by_runtime"), B(names.GracePeriodOverrun, true))
	root.StatusMessage = "grace period overrun by 0.012s"
	add(root)
	return out
}
