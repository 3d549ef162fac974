package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/podchron/podchron/internal/span"
)

func id(n byte) span.SpanID { return span.SpanID{1, 2, 3, 4, 5, 6, 7, n} }

func sorted(ids []span.SpanID) []string {
	out := make([]string, len(ids))
	for i, x := range ids {
		out[i] = x.String()
	}
	slices.Sort(out)
	return out
}

func open(t *testing.T, dir string, slots int) (*File, []span.SpanID) {
	t.Helper()
	c, ids, err := Open(dir, slots)
	if err != nil {
		t.Fatal(err)
	}
	return c, ids
}

// What one instance emitted, the next is given: across a restart, and
// only the newest once the ring has wrapped; the file stays its size.
func TestCheckpointAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	c, ids := open(t, dir, 4)
	if len(ids) != 0 {
		t.Fatalf("new checkpoint holds %v", ids)
	}
	var got []span.SpanID
	sink := c.Sink(span.SinkFunc(func(s span.Span) { got = append(got, s.SpanID) }), func(err error) { t.Error(err) })
	for n := byte(1); n <= 3; n++ {
		sink.Emit(span.Span{SpanID: id(n)})
	}
	if len(got) != 3 {
		t.Fatalf("the sink passed %d spans on, want 3", len(got))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c, ids = open(t, dir, 4)
	if want := sorted([]span.SpanID{id(1), id(2), id(3)}); !slices.Equal(sorted(ids), want) {
		t.Fatalf("after a restart: %v, want %v", sorted(ids), want)
	}
	for n := byte(4); n <= 6; n++ {
		if err := c.Add(id(n)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	c, ids = open(t, dir, 4)
	defer c.Close()
	if want := sorted([]span.SpanID{id(3), id(4), id(5), id(6)}); !slices.Equal(sorted(ids), want) {
		t.Fatalf("after the ring wrapped: %v, want the newest 4 %v", sorted(ids), want)
	}
	if c.Written() != 6 {
		t.Errorf("written %d, want 6", c.Written())
	}
	if fi, err := os.Stat(filepath.Join(dir, FileName)); err != nil || fi.Size() != 8+4*8 {
		t.Errorf("file size %v (%v), want %d", fi.Size(), err, 8+4*8)
	}
}

// A second tracer on the node cannot take the checkpoint while the first
// holds it; it can once the first has stopped.
func TestCheckpointOneInstance(t *testing.T) {
	dir := t.TempDir()
	c, _ := open(t, dir, 8)
	if _, _, err := Open(dir, 8); err == nil || !strings.Contains(err.Error(), "held by another tracer") {
		t.Fatalf("second Open: %v, want held by another tracer", err)
	}
	c.Close()
	c2, _ := open(t, dir, 8)
	c2.Close()
}

// Resizing keeps what fits; a torn or foreign file is read as far as it
// goes.
func TestCheckpointResizeAndTornFile(t *testing.T) {
	dir := t.TempDir()
	c, _ := open(t, dir, 4)
	for n := byte(1); n <= 4; n++ {
		if err := c.Add(id(n)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	c, ids := open(t, dir, 2)
	if len(ids) != 2 {
		t.Fatalf("shrunk to 2 slots: %v", sorted(ids))
	}
	c.Close()
	c, ids = open(t, dir, 16)
	c.Close()
	if len(ids) != 2 {
		t.Fatalf("grown to 16 slots: %v", sorted(ids))
	}
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, ids = open(t, dir, 16)
	defer c.Close()
	if len(ids) != 0 {
		t.Fatalf("a 7-byte file gave %v", sorted(ids))
	}
	if err := c.Add(id(9)); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointBadDir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Open(filepath.Join(f, "sub"), 8); err == nil {
		t.Fatal("Open under a regular file succeeded")
	}
	if _, _, err := Open(t.TempDir(), 0); err == nil {
		t.Fatal("Open with 0 slots succeeded")
	}
}
