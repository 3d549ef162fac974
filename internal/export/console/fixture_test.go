package console

import (
	"math"
	"time"

	"github.com/podchron/podchron/internal/correlate"
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
	tid correlate.TraceID
	res []correlate.Attr
}

func newPod(uid, ns, name, node string) *spanBuilder {
	return &spanBuilder{
		tid: correlate.TraceIDForPod(uid),
		res: []correlate.Attr{
			correlate.String("k8s.pod.uid", uid),
			correlate.String("k8s.pod.name", name),
			correlate.String("k8s.namespace.name", ns),
			correlate.String("k8s.node.name", node),
		},
	}
}

func (b *spanBuilder) id(key string) correlate.SpanID { return correlate.SpanIDFor(b.tid, key) }

func (b *spanBuilder) span(key, parent, name string, start, end float64, st correlate.Status, attrs ...correlate.Attr) correlate.Span {
	s := correlate.Span{
		TraceID: b.tid, SpanID: b.id(key), Name: name,
		Start: at(start), End: at(end), Status: st, Attrs: attrs, Resource: b.res,
	}
	if parent != "" {
		s.Parent = b.id(parent)
	}
	return s
}

func ev(name string, sec float64, attrs ...correlate.Attr) correlate.SpanEvent {
	return correlate.SpanEvent{Name: name, Time: at(sec), Attrs: attrs}
}

// lifecycle is a realistic emission order for two pods on one node: web
// starts (scheduling, sandbox with 3 CNI ADDs, init container, image pull,
// app start, postStart, readiness probes), runs, and is deleted: preStop,
// SIGTERM ignored, SIGKILL at the end of the grace period (overrun), CNI
// DEL. A second pod, seen from mid-life with a degraded source, completes
// in between.
func lifecycle() []correlate.Span {
	web := newPod("6f1c2e3a-0b1d-4c5e-8f90-a1b2c3d4e5f6", "default", "web-7d4b9c8f6-x2k9p", "worker-1")
	dns := newPod("0c9d8e7f-1111-2222-3333-444455556666", "kube-system", "coredns-5d78c9869d-4kq2z", "worker-1")
	ok, unset, bad := correlate.StatusOK, correlate.StatusUnset, correlate.StatusError
	S, I, B := correlate.String, correlate.Int, correlate.Bool
	app := S("k8s.container.name", "app")
	appID := S("container.id", "3f9a1c2b7d8e4f60a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718")

	var out []correlate.Span
	add := func(s correlate.Span) { out = append(out, s) }

	// --- web: startup, children first ---
	add(web.span("startup/scheduling", "startup", "pod.scheduling", 0, 0.045, ok))
	for i, c := range []struct {
		plugin     string
		start, end float64
		pid        int64
	}{{"bridge", 0.420, 0.468, 31337}, {"portmap", 0.470, 0.492, 31352}, {"bandwidth", 0.494, 0.505, 31360}} {
		add(web.span("startup/sandbox/cni/"+c.plugin, "startup/sandbox", "cni.ADD "+c.plugin, c.start, c.end, ok,
			S("podchron.cni.plugin", c.plugin), S("podchron.cni.command", "ADD"),
			I("process.exit.code", 0), I("process.pid", c.pid+int64(i)),
			correlate.Strings("process.command_args", "/opt/cni/bin/"+c.plugin)))
	}
	add(web.span("startup/sandbox", "startup", "pod.sandbox", 0.060, 0.910, ok))
	add(web.span("container/init-db/0/init", "startup", "container.init", 0.920, 1.900, ok,
		S("k8s.container.name", "init-db"), I("process.pid", 31410),
		correlate.Strings("process.command_args", "sh", "-c", "until nc -z db 5432; do sleep 0.2; done"),
		I("process.exit.code", 0), S("podchron.exit.cause", "completed")))
	add(web.span("container/app/0/pull", "startup", "container.image_pull", 1.910, 2.950, ok, app))
	add(web.span("container/app/0/start", "startup", "container.start", 2.960, 3.120, ok, app, appID, I("process.pid", 31502)))
	add(web.span("container/app/0/poststart", "startup", "container.poststart", 3.120, 3.400, ok, app,
		correlate.Strings("process.command_args", "/bin/warmup", "--cache")))
	p1 := web.span("container/app/0/probe/readiness/1", "startup", "probe.readiness", 4.000, 4.015, bad, app,
		S("podchron.probe.type", "readiness"), S("podchron.probe.result", "failure"))
	p1.StatusMessage = "HTTP probe failed with statuscode: 503"
	add(p1)
	add(web.span("container/app/0/probe/readiness/2", "startup", "probe.readiness", 6.000, 6.012, ok, app,
		S("podchron.probe.type", "readiness"), S("podchron.probe.result", "success")))
	add(web.span("startup", "root", "pod.startup", 0, 6.012, ok))

	// --- dns: observed from mid-life, completes ---
	dnsRun := dns.span("container/coredns/2/run", "root", "container.run", 100, 130.25, ok,
		S("k8s.container.name", "coredns"), I("process.pid", 2877), I("process.exit.code", 0),
		S("podchron.exit.cause", "completed"), I("podchron.restart.count", 2))
	add(dnsRun)
	dnsRoot := dns.span("root", "", "pod", 100, 130.5, unset,
		S("podchron.observed_from", "2026-03-01T10:01:40Z"), S("podchron.degraded", "api server unreachable for 4s"),
		I("podchron.events_lost", 17))
	dnsRoot.StatusMessage = "unfinished: observed from mid-life"
	add(dnsRoot)

	// --- web: termination, children first ---
	add(web.span("termination/prestop/app", "termination", "container.prestop", 600.010, 605.020, ok, app,
		correlate.Strings("process.command_args", "sleep", "5"), I("process.exit.code", 0)))
	stop := web.span("termination/stop/app", "termination", "container.stop", 605.020, 630.012, bad, app,
		S("podchron.signal", "SIGTERM"), S("podchron.signal.disposition", "ignored"),
		S("podchron.signal.sender.kind", "runtime"), S("podchron.signal.sender.comm", "containerd-shim"),
		I("podchron.signal.sender.pid", 2211),
		I("podchron.grace_period.seconds", 30), B("podchron.grace_period.overrun", true), B("podchron.sigkill", true),
		I("process.exit.code", 137), S("podchron.exit.cause", "killed_by_runtime"))
	stop.StatusMessage = "grace period overrun: SIGKILL after 30s"
	stop.Events = []correlate.SpanEvent{
		ev("SIGTERM", 605.020, S("podchron.signal", "SIGTERM"), S("podchron.signal.disposition", "ignored"),
			S("podchron.signal.sender.kind", "runtime"), S("podchron.signal.sender.comm", "containerd-shim"),
			I("podchron.signal.sender.pid", 2211)),
		ev("SIGKILL", 630.000, S("podchron.signal", "SIGKILL"), S("podchron.signal.disposition", "default"),
			S("podchron.signal.sender.kind", "runtime"), S("podchron.signal.sender.comm", "containerd-shim"),
			I("podchron.signal.sender.pid", 2211)),
		ev("exit", 630.012, I("process.exit.code", 137), I("process.pid", 31502)),
	}
	add(stop)
	add(web.span("termination", "root", "pod.termination", 600.000, 630.012, bad,
		I("podchron.grace_period.seconds", 30), B("podchron.grace_period.overrun", true)))
	add(web.span("container/app/0/run", "root", "container.run", 3.120, 630.012, unset, app, appID,
		I("process.pid", 31502), I("process.exit.code", 137), S("podchron.exit.cause", "killed_by_runtime"),
		S("podchron.signal", "SIGKILL"), I("podchron.restart.count", 0)))
	add(web.span("cleanup/cni/bridge", "cleanup", "cni.DEL bridge", 630.100, 630.131, ok,
		S("podchron.cni.plugin", "bridge"), S("podchron.cni.command", "DEL"), I("process.exit.code", 0),
		I("process.pid", 32001)))
	add(web.span("cleanup", "root", "pod.cleanup", 630.020, 630.480, ok))
	root := web.span("root", "", "pod", 0, 630.480, bad,
		S("podchron.exit.cause", "killed_by_runtime"), B("podchron.grace_period.overrun", true))
	root.StatusMessage = "grace period overrun by 0.012s"
	add(root)
	return out
}
