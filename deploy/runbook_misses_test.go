package deploy

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/podchron/podchron/internal/names"
)

// The RUNBOOK's table of correlation misses is the model's list
// (names.MissReasons): a reason the tracer counts is explained there, in
// the same words, and the table names no reason the tracer cannot count.
const (
	missTableStart = "<!-- miss reasons: generated from internal/names/misses.go by go test ./deploy -run TestRunbookMissReasons -update -->\n"
	missTableEnd   = "<!-- end of miss reasons -->\n"
)

func missTable() string {
	var b strings.Builder
	b.WriteString("| reason | usual | what was not attached, and what a trace lacks |\n| --- | --- | --- |\n")
	for _, m := range names.MissReasons {
		usual := "no"
		if m.Usual {
			usual = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", m.Miss, usual, m.Meaning)
	}
	return b.String()
}

func TestRunbookMissReasons(t *testing.T) {
	raw, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, missTableStart), strings.Index(doc, missTableEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no miss reasons table between %q and %q", runbookFile, missTableStart, missTableEnd)
	}
	got, want := doc[i+len(missTableStart):j], missTable()
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(runbookFile, []byte(doc[:i+len(missTableStart)]+want+doc[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's miss reasons differ from internal/names/misses.go: regenerate with go test ./deploy -run TestRunbookMissReasons -update\ngot:\n%s\nwant:\n%s", runbookFile, got, want)
}
