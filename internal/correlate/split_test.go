package correlate_test

import (
	"compress/gzip"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/names"
	"github.com/podchron/podchron/internal/record"
	"github.com/podchron/podchron/internal/span"
)

// The e2e's node recordings (testdata/e2e/<what>@<stack>.jsonl.gz) are the
// whole input stream a tracer on the e2e node took in while the cluster
// ran the scenarios (PODCHRON_E2E_RECORD, test/e2e/record_test.go): many
// pods side by side. The restart property runs on each namespace's stream
// cut out of them (record.SplitByNamespace), one scenario each.

// e2eSplitTail is how long each namespace's stream keeps the facts about
// no pod after its own last fact (the e2e's recordTail).
const e2eSplitTail = 90 * time.Second

// nodeRecordings are the e2e's node recordings.
func nodeRecordings(t *testing.T) []recordedStream {
	t.Helper()
	files, err := filepath.Glob("testdata/e2e/*.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	var out []recordedStream
	for _, f := range files {
		out = append(out, recordedStream{name: strings.TrimSuffix(strings.TrimPrefix(f, "testdata/"), ".jsonl.gz"), inputs: loadGzip(t, f)})
	}
	return out
}

func loadGzip(t *testing.T, path string) []fact.Input {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	in, err := record.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return in
}

// A namespace's stream cut out of a node's recording must give that
// namespace's traces as the whole stream does: the same span IDs with the
// same content, none missing, none added.
func TestSplitByNamespaceKeepsTraces(t *testing.T) {
	recs := nodeRecordings(t)
	if len(recs) == 0 {
		t.Fatal("no node recordings in testdata/e2e")
	}
	for _, n := range recs {
		t.Run(n.name, func(t *testing.T) {
			whole := byNamespace(replay(n.inputs))
			split := record.SplitByNamespace(n.inputs, e2eSplitTail)
			if len(split) < 2 {
				t.Fatalf("%d namespaces in a node's recording", len(split))
			}
			for _, ns := range slices.Sorted(maps.Keys(split)) {
				got, want := byNamespace(replay(split[ns]))[ns], whole[ns]
				sameSpans(t, ns, got, want)
				t.Logf("%s: %d of %d inputs, %d spans", ns, len(split[ns]), len(n.inputs), len(want))
			}
		})
	}
}

func sameSpans(t *testing.T, ns string, got, want map[span.SpanID]span.Span) {
	t.Helper()
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			t.Errorf("%s: span %s %s missing from the split stream's replay", ns, id, w.Name)
		case content(g) != content(w) && !(stillAlive(g) && stillAlive(w) && sameButEnd(g, w)):
			t.Errorf("%s: span %s differs:\n  whole %s\n  split %s", ns, id, content(w), content(g))
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("%s: span %s %s only in the split stream's replay", ns, id, g.Name)
		}
	}
}

// stillAlive: a span the replay's end closed (a pod or container still
// alive when the recording stopped): it ends at the stream's last input,
// which a split stream has earlier than the whole.
func stillAlive(s span.Span) bool { return strings.HasSuffix(s.StatusMessage, "tracer stopped") }

func sameButEnd(a, b span.Span) bool {
	a.End, b.End = time.Time{}, time.Time{}
	return content(a) == content(b)
}

// byNamespace groups spans by their trace's k8s.namespace.name (the root
// carries it; every span of the trace belongs to it).
func byNamespace(spans []span.Span) map[string]map[span.SpanID]span.Span {
	nsOf := map[span.TraceID]string{}
	for _, s := range spans {
		for _, a := range append(s.Resource, s.Attrs...) {
			if a.Key == string(names.K8sNamespaceName) {
				nsOf[s.TraceID] = a.Value.(string)
			}
		}
	}
	out := map[string]map[span.SpanID]span.Span{}
	for _, s := range spans {
		ns := nsOf[s.TraceID]
		if out[ns] == nil {
			out[ns] = map[span.SpanID]span.Span{}
		}
		out[ns][s.SpanID] = s
	}
	return out
}
