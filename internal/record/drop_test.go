package record

import (
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/cri"
)

// DropNamespaces leaves out the facts of a namespace's pods and keeps the
// rest, those about no pod included.
func TestDropNamespaces(t *testing.T) {
	at := time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)
	pod := func(uid, ns string) fact.Input {
		return fact.Input{Time: at, Pod: &fact.PodInfo{UID: uid, Name: "p", Namespace: ns}}
	}
	sandbox := func(uid, ns string) fact.Input {
		return fact.Input{Time: at, Runtime: &cri.Event{Type: cri.EventSandboxCreated, At: at,
			Sandbox: &cri.Sandbox{ID: "sb-" + uid, PodUID: uid, PodName: "p", PodNamespace: ns}}}
	}
	in := []fact.Input{pod("a", "shop"), sandbox("a", "shop"), pod("b", "demo"), sandbox("b", "demo"),
		{Time: at, Progress: &fact.Progress{Source: fact.SourceRuntime, Until: at}}}
	out := DropNamespaces(in, "demo")
	if len(out) != 3 {
		t.Fatalf("%d inputs left, want 3 (shop's pod and sandbox, the progress)", len(out))
	}
	for _, x := range out {
		if x.Pod != nil && x.Pod.Namespace == "demo" || x.Runtime != nil && x.Runtime.Sandbox.PodNamespace == "demo" {
			t.Errorf("a fact of namespace demo kept: %+v", x)
		}
	}
}
