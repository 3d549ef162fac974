package correlate_test

import (
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"

	"github.com/podchron/podchron/internal/probe"
)

// BenchmarkSequencedKernelEvent is BenchmarkCorrelateKernelEvent with the
// sources reporting progress: every kernel event waits in the sequencer for
// the runtime's next poll (a mark every 5000 events: an exec storm of
// several thousand events a second against a poll a second), the kernel's
// own mark every 250. One op is one event.
func BenchmarkSequencedKernelEvent(b *testing.B) {
	n := newNode(110)
	n.c.Handle(fact.Input{Time: n.t, Start: &fact.Start{At: n.t, Progress: []string{fact.SourceKernel, fact.SourceRuntime}}})
	recs := rawChurn(n)
	dec := probe.NewDecoder()
	t := n.t
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		ev, err := dec.Decode(recs[i%len(recs)])
		if err != nil {
			b.Fatal(err)
		}
		t = t.Add(time.Microsecond)
		ev.Hdr().Time = t
		n.c.Handle(fact.Input{Time: t, Kernel: ev})
		i++
		if i%250 == 0 {
			n.c.Handle(fact.Input{Time: t, Progress: &fact.Progress{Source: fact.SourceKernel, Until: t}})
		}
		if i%5000 == 0 {
			n.c.Handle(fact.Input{Time: t, Progress: &fact.Progress{Source: fact.SourceRuntime, Until: t}})
		}
	}
}
