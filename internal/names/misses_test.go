package names

import "testing"

// Every miss reason declared in misses.go is in MissReasons, so the
// exporter starts it at 0 and the RUNBOOK explains it; a reason added as a
// constant alone would be counted from nowhere and explained nowhere. Each
// is listed once, with its meaning.
func TestEveryMissIsListed(t *testing.T) {
	declared := constants(t, "misses.go")
	if len(declared) < 20 {
		t.Fatalf("read %d miss reasons from misses.go, want all of them", len(declared))
	}
	listed := map[Miss]bool{}
	for _, m := range MissReasons {
		if listed[m.Miss] || m.Meaning == "" {
			t.Errorf("miss reason %q: listed twice, or without its meaning", m.Miss)
		}
		listed[m.Miss] = true
	}
	for name, v := range declared {
		if !listed[Miss(v)] {
			t.Errorf("%s = %q is not in MissReasons", name, v)
		}
	}
	if len(listed) != len(declared) {
		t.Errorf("MissReasons lists %d reasons, misses.go declares %d", len(listed), len(declared))
	}
}
