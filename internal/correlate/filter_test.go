package correlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/span"

	"github.com/podchron/podchron/internal/correlate"
	"github.com/podchron/podchron/internal/fact/cri"
)

// A pod in a namespace the filter leaves out, or that opts out, gives no
// span and no metric; the same pod in an included namespace gives both.
func TestFilterDropsSpansAndMetrics(t *testing.T) {
	for _, tc := range []struct {
		name             string
		include, exclude string
		optOut           bool
		traced           bool
	}{
		{"no filter", "", "", false, true},
		{"excluded", "", "kube-.*|shop", false, false},
		{"not included", "prod-.*", "", false, false},
		{"included", "sh.p", "", false, true},
		{"whole name only", "sho", "", false, false},
		{"opt out", "", "", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t)
			f, err := correlate.NewFilter(tc.include, tc.exclude)
			if err != nil {
				t.Fatal(err)
			}
			s.c = correlate.New(correlate.Config{NodeName: "node-a", Observer: s.o, StuckAfter: 10 * time.Second, Filter: f,
				Sink: span.SinkFunc(func(sp span.Span) { s.spans = append(s.spans, sp) })})
			s.info.OptOut = tc.optOut
			app := s.startup()
			s.at(time.Second)
			s.exit("app", app, 1, 0)
			s.cri(cri.EventContainerExited, "app", 1, "Error")
			s.tick(3 * time.Second)
			spans := len(s.spans)
			var shop int
			for _, c := range s.o.calls {
				if strings.Contains(c, "shop") {
					shop++
				}
			}
			if tc.traced && (spans == 0 || shop == 0) || !tc.traced && (spans != 0 || shop != 0) {
				t.Errorf("traced %v: %d spans, %d measurements of namespace shop (%v)", tc.traced, spans, shop, s.o.calls)
			}
			if st := s.c.Stats(); !tc.traced && st.SpansFiltered == 0 {
				t.Errorf("no span counted as filtered: %+v", st)
			}
		})
	}
	if _, err := correlate.NewFilter("(", ""); err == nil {
		t.Error("a bad pattern was accepted")
	}
}
