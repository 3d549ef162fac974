package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A record file whose last line was torn by a crash: replay says so,
// naming the line, and replays and flushes everything before it (the same
// output as the file without that line).
func TestReplayTornLastLine(t *testing.T) {
	full, err := os.ReadFile("../../internal/correlate/testdata/oom-killed.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.TrimSuffix(string(full), "\n")
	lastStart := strings.LastIndexByte(text, '\n') + 1
	lastLine := strings.Count(text[:lastStart], "\n") + 1
	dir := t.TempDir()
	whole := filepath.Join(dir, "whole.jsonl") // the last line left out
	torn := filepath.Join(dir, "torn.jsonl")   // the last line cut in two
	if err := os.WriteFile(whole, []byte(text[:lastStart]), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(torn, []byte(text[:lastStart+(len(text)-lastStart)/2]), 0o600); err != nil {
		t.Fatal(err)
	}
	replay := func(path string) (string, string) {
		var out, errb bytes.Buffer
		if err := runReplay(path, nil, &out, &errb); err != nil {
			t.Fatalf("replay %s: %v", path, err)
		}
		return out.String(), errb.String()
	}
	wantOut, _ := replay(whole)
	gotOut, gotErr := replay(torn)
	if wantOut == "" {
		t.Fatal("the intact part replays to nothing: the test proves nothing")
	}
	if gotOut != wantOut {
		t.Errorf("torn file replayed to\n%s\nwant (the file without its last line)\n%s", gotOut, wantOut)
	}
	if want := "line " + strconv.Itoa(lastLine) + ": torn last line"; !strings.Contains(gotErr, want) {
		t.Errorf("stderr %q does not say %q", gotErr, want)
	}
}
