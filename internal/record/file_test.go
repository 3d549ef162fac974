package record

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podchron/podchron/internal/fact"
)

func TestCreateNewFileOwnerOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	old := syscall.Umask(0) // the mode must not depend on the umask
	defer syscall.Umask(old)
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	checkMode(t, path)
}

// An existing file readable by others is forced to 0600 and emptied.
func TestCreateExistingFileForced0600(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	if err := os.WriteFile(path, []byte("old contents\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("new\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	checkMode(t, path)
	if b, _ := os.ReadFile(path); string(b) != "new\n" {
		t.Errorf("contents %q, want the old ones gone", b)
	}
}

// A symbolic link at the path is refused, and its target left alone.
func TestCreateRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	if err := os.WriteFile(target, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "rec.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	// Dangling too: following it would create the target.
	dangling := filepath.Join(dir, "dangling.jsonl")
	if err := os.Symlink(filepath.Join(dir, "created-through-link"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{link, dangling} {
		f, err := Create(p)
		if err == nil {
			f.Close()
			t.Fatalf("Create(%s) through a symbolic link succeeded", p)
		}
		if !strings.Contains(err.Error(), "symbolic link") || !errors.Is(err, syscall.ELOOP) {
			t.Errorf("error %v, want one saying symbolic link (ELOOP)", err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep me\n" {
		t.Errorf("target now %q", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o644 {
		t.Errorf("target mode %v changed", fi.Mode().Perm())
	}
	if _, err := os.Lstat(filepath.Join(dir, "created-through-link")); err == nil {
		t.Error("a file was created through the dangling link")
	}
}

// A FIFO is refused without hanging; a hard link to another file is
// refused and the file left alone.
func TestCreateRefusesFIFOAndHardLink(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := Create(fifo)
		if err == nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		// Without a reader the open fails (ENXIO); with one, the
		// type check refuses it.
		if err == nil {
			t.Error("FIFO: accepted")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Create hung on a FIFO")
	}

	orig := filepath.Join(dir, "orig")
	if err := os.WriteFile(orig, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "rec.jsonl")
	if err := os.Link(orig, hard); err != nil {
		t.Fatal(err)
	}
	if f, err := Create(hard); err == nil || !strings.Contains(err.Error(), "hard links") {
		if f != nil {
			f.Close()
		}
		t.Errorf("hard link: error %v, want hard links", err)
	}
	if b, _ := os.ReadFile(orig); string(b) != "keep\n" {
		t.Errorf("linked file now %q", b)
	}
}

func checkMode(t *testing.T, path string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want a regular file 0600", path, fi.Mode())
	}
}

// writeRecording writes n tick inputs to a record file and returns its
// bytes.
func writeRecording(t *testing.T, n int) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWriter(f)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	for i := range n {
		in := fact.Input{Time: t0.Add(time.Duration(i) * time.Second), Progress: &fact.Progress{Source: fact.SourceAPI, Until: t0}}
		if err := w.Write(in); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A last line cut short (as a crash leaves it) is reported as torn, naming
// the line, after every input before it.
func TestTornLastLine(t *testing.T) {
	full := writeRecording(t, 5)
	// Cut the last line (line 6: header + 5) in its middle.
	lastStart := strings.LastIndexByte(strings.TrimSuffix(string(full), "\n"), '\n') + 1
	for _, cut := range []int{lastStart + 1, lastStart + 10, len(full) - 2} {
		rd, err := NewReader(strings.NewReader(string(full[:cut])))
		if err != nil {
			t.Fatal(err)
		}
		var got []fact.Input
		for {
			in, err := rd.Next()
			if errors.Is(err, ErrTornLine) {
				var te *TornLineError
				if !errors.As(err, &te) || te.Line != 6 || te.Bytes != cut-lastStart {
					t.Errorf("cut at %d: %v (%+v), want line 6, %d bytes", cut, err, te, cut-lastStart)
				}
				if !strings.Contains(err.Error(), "line 6") {
					t.Errorf("error %q does not name line 6", err)
				}
				if _, err := rd.Next(); !errors.Is(err, io.EOF) {
					t.Errorf("after the torn line: %v, want EOF", err)
				}
				break
			}
			if err != nil {
				t.Fatalf("cut at %d: after %d inputs: %v", cut, len(got), err)
			}
			got = append(got, in)
		}
		if len(got) != 4 {
			t.Errorf("cut at %d: %d inputs before the torn line, want 4", cut, len(got))
		}
	}
}

// Only the last line can be torn: a bad line followed by more is an error
// of its own, and a last line without a newline that is whole is read.
func TestTornOnlyAtEnd(t *testing.T) {
	full := string(writeRecording(t, 3))
	lines := strings.SplitAfter(full, "\n")
	bad := lines[0] + lines[1][:10] + "\n" + lines[2] + lines[3]
	rd, err := NewReader(strings.NewReader(bad))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(); err == nil || errors.Is(err, ErrTornLine) || !strings.Contains(err.Error(), "record line 2") {
		t.Errorf("bad middle line: %v, want a line 2 error that is not torn", err)
	}
	all, err := ReadAll(strings.NewReader(strings.TrimSuffix(full, "\n")))
	if err != nil || len(all) != 3 {
		t.Errorf("whole last line without a newline: %d inputs, %v", len(all), err)
	}
}
