package names

import "testing"

// The sources' spellings are fixed: Record's are in every recording
// (progress lines), Label's in dashboards and alerts (podchron_source_up).
func TestSourceSpellings(t *testing.T) {
	for _, c := range []struct {
		s             Source
		record, label string
	}{
		{SourceKernel, "kernel", "kernel"},
		{SourceRuntime, "runtime", "runtime"},
		{SourceAPI, "api", "apiserver"},
	} {
		if got := c.s.Record(); got != c.record {
			t.Errorf("%v.Record() = %q, want %q", c.s, got, c.record)
		}
		if got := c.s.Label(); got != c.label {
			t.Errorf("%v.Label() = %q, want %q", c.s, got, c.label)
		}
	}
	if got := Sources(); len(got) != 3 || got[0] != SourceKernel {
		t.Errorf("Sources() = %v, want the three sources, the kernel first", got)
	}
}
