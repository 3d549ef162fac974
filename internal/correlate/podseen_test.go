package correlate_test

import (
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/names"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact/cri"
)

// seen returns the observer's PodSeen calls, in order.
func (o *obs) seen() []string {
	var out []string
	for _, c := range o.calls {
		if strings.HasPrefix(c, "seen ") {
			out = append(out, c)
		}
	}
	return out
}

// checkSeenFirst fails if an observation naming a namespace comes before
// PodSeen for that namespace. Every obs call is "<what> <namespace> ...".
func checkSeenFirst(t *testing.T, calls []string) {
	t.Helper()
	seen := map[string]bool{}
	for i, c := range calls {
		what, rest, _ := strings.Cut(c, " ")
		ns, _, _ := strings.Cut(rest, " ")
		if what == "seen" {
			seen[ns] = true
			continue
		}
		if ns != "" && !seen[ns] {
			t.Errorf("call %d %q before PodSeen(%s): %q", i, c, ns, calls)
		}
	}
}

// The API server's view comes first: one PodSeen with the owner kind, none
// again for the runtime, CNI and kernel facts of the pod's whole life.
func TestPodSeenOncePerPod(t *testing.T) {
	s := newSim(t)
	app := s.startup()
	del := s.now.Add(3 * time.Second)
	grace := int64(3)
	s.info.DeletionTimestamp, s.info.DeletionGracePeriodSeconds = &del, &grace
	s.pod()
	s.tick(time.Second)
	s.exit("app", app, 0, syscall.SIGTERM)
	s.info.Deleted = true
	s.pod()
	s.one("pod")
	if got := s.o.seen(); !slices.Equal(got, []string{"seen shop ReplicaSet"}) {
		t.Errorf("PodSeen calls %q, want one for shop ReplicaSet", got)
	}
	if len(s.o.calls) == 0 || s.o.calls[0] != "seen shop ReplicaSet" {
		t.Errorf("PodSeen is not the first observation: %q", s.o.calls)
	}
	checkSeenFirst(t, s.o.calls)
}

// The runtime names the namespace before the API server's view arrives:
// PodSeen with owner kind none, then once more when the owner kind becomes
// known, and not again.
func TestPodSeenRuntimeBeforeAPI(t *testing.T) {
	s := newSim(t)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s.now,
		Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
	s.at(time.Second)
	s.in(fact.Input{Runtime: &cri.Event{Type: cri.EventContainerCreated, At: s.now,
		Container: &cri.Container{ID: "c0ffee02", SandboxID: "sb1", Name: "app", PodUID: s.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s.now}}})
	if got := s.o.seen(); !slices.Equal(got, []string{"seen shop none"}) {
		t.Fatalf("after the runtime's facts: PodSeen calls %q, want one for shop none", got)
	}
	s.pod()
	s.cond("PodScheduled")
	if got := s.o.seen(); !slices.Equal(got, []string{"seen shop none", "seen shop ReplicaSet"}) {
		t.Errorf("after the API server's view: PodSeen calls %q", got)
	}
	// A pod the API server knows without an owner stays at none: no call.
	s2 := newSim(t)
	s2.info.OwnerKind = ""
	s2.in(fact.Input{Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: s2.now,
		Sandbox: &cri.Sandbox{ID: "sb1", PodUID: s2.uid, PodName: "web-7d9f", PodNamespace: "shop", CreatedAt: s2.now}}})
	s2.pod()
	if got := s2.o.seen(); !slices.Equal(got, []string{"seen shop none"}) {
		t.Errorf("bare pod: PodSeen calls %q, want one for shop none", got)
	}
}

// The recorded runs (runtime, CNI and kernel facts, no API server), as
// recorded, in their golden variants and without the runtime: PodSeen is called once for each pod whose
// trace names a namespace, with that namespace, before any observation in
// it; owner kind none without the API server.
func TestPodSeenReplays(t *testing.T) {
	for _, run := range recorded(t) {
		base, inputs, variants := run.base, run.inputs, run.variants
		// Without the runtime's facts, only the CNI runs name the namespace.
		var noRuntime []fact.Input
		for _, x := range inputs {
			if x.Runtime == nil {
				noRuntime = append(noRuntime, x)
			}
		}
		variants["-no-runtime"] = noRuntime
		for suffix, in := range variants {
			t.Run(base+suffix, func(t *testing.T) {
				o := &obs{}
				var want []string
				c := correlate.New(correlate.Config{Observer: o, Sink: span.SinkFunc(func(s span.Span) {
					if !s.Parent.IsZero() {
						return
					}
					for _, a := range s.Resource {
						if a.Key == names.K8sNamespaceName {
							want = append(want, "seen "+a.Value.(string)+" none")
						}
					}
				})})
				for _, x := range in {
					c.Handle(x)
				}
				c.Flush()
				if len(want) == 0 {
					t.Fatal("no pod of the recording names its namespace")
				}
				got := o.seen()
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("PodSeen calls %q, want %q (one per pod)", got, want)
				}
				checkSeenFirst(t, o.calls)
			})
		}
	}
}
