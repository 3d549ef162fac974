package names

import "testing"

// Every miss reason declared in misses.go is in MissReasons, so the
// exporter starts it at 0 and the RUNBOOK explains it; a reason added as a
// constant alone would be counted from nowhere and explained nowhere.
func TestEveryMissIsListed(t *testing.T) {
	declared := constants(t, "misses.go")
	if len(declared) < 20 {
		t.Fatalf("read %d miss reasons from misses.go, want all of them", len(declared))
	}
	listed := map[Miss]bool{}
	for _, m := range MissReasons {
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
