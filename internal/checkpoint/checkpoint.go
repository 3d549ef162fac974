// Package checkpoint keeps on the node the span IDs the tracer emitted, as
// the kubelet keeps its own checkpoints, so that the next instance (a
// restart, an upgrade, a crash) tells none of them again: it is given them
// as correlate.Config.Emitted.
//
// The file is a ring of Slots 8-byte span IDs after an 8-byte header (the
// count of IDs ever written, big-endian): each span's ID is written in
// place (pwrite) before the span goes on, then the header; the file never
// grows past (Slots+1)*8 bytes, and the oldest IDs are overwritten first.
// A crash between the two writes loses at most that one ID's place (the
// next write reuses the slot). One instance at a time: the file is locked
// (flock); a second tracer on the node gets an error and runs without.
package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/podchron/podchron/internal/span"
)

// DefaultSlots is how many span IDs the ring keeps: 512 KiB on disk. A
// node's live and recently ended pods emit far fewer; a crash-looping pod
// emits 2 a restart, so a week of 5-minute back-offs is 4,032.
const DefaultSlots = 1 << 16

// FileName is the checkpoint's name in the state directory.
const FileName = "emitted-spans"

// File is an open checkpoint.
type File struct {
	mu    sync.Mutex
	f     *os.File
	slots uint64
	count uint64
	err   error // the first write error (the checkpoint then stops)
}

// Open opens (or creates) dir/FileName with slots places and returns the
// IDs it holds. A file of another size is read as far as it goes and then
// resized.
func Open(dir string, slots int) (*File, []span.SpanID, error) {
	if slots <= 0 {
		return nil, nil, fmt.Errorf("checkpoint: %d slots", slots)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("checkpoint directory: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("checkpoint: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("checkpoint %s is held by another tracer on this node: %w", path, err)
	}
	c := &File{f: f, slots: uint64(slots)}
	ids, err := c.load()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return c, ids, nil
}

// load reads the IDs and leaves the file at its size with a valid header.
func (c *File) load() ([]span.SpanID, error) {
	data, err := io.ReadAll(io.NewSectionReader(c.f, 0, 1<<40))
	if err != nil {
		return nil, err
	}
	ids := []span.SpanID{} // not nil: a checkpoint, even empty (correlate.Config.Emitted)
	if len(data) >= 8 {
		c.count = binary.BigEndian.Uint64(data[:8])
		for off := 8; off+8 <= len(data); off += 8 {
			var id span.SpanID
			copy(id[:], data[off:off+8])
			if !id.IsZero() {
				ids = append(ids, id)
			}
		}
	}
	if fileSlots := uint64(max(len(data)-8, 0) / 8); fileSlots != c.slots {
		// Resized (or new): keep what fits, in the ring's order from slot 0.
		if uint64(len(ids)) > c.slots {
			ids = ids[uint64(len(ids))-c.slots:]
		}
		buf := make([]byte, 8+8*c.slots)
		for i, id := range ids {
			copy(buf[8+8*i:], id[:])
		}
		c.count = uint64(len(ids))
		binary.BigEndian.PutUint64(buf[:8], c.count)
		if err := c.f.Truncate(0); err != nil {
			return nil, err
		}
		if _, err := c.f.WriteAt(buf, 0); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// Add records one span ID.
func (c *File) Add(id span.SpanID) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return c.err
	}
	var hdr [8]byte
	binary.BigEndian.PutUint64(hdr[:], c.count+1)
	if _, err := c.f.WriteAt(id[:], int64(8+8*(c.count%c.slots))); err != nil {
		c.err = fmt.Errorf("checkpoint: %w", err)
		return c.err
	}
	if _, err := c.f.WriteAt(hdr[:], 0); err != nil {
		c.err = fmt.Errorf("checkpoint: %w", err)
		return c.err
	}
	c.count++
	return nil
}

// Written is how many IDs were ever written to the file.
func (c *File) Written() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// Sink records each span's ID, then passes the span on. A write error is
// reported once through onErr and the checkpoint stops; the spans go on.
func (c *File) Sink(next span.Sink, onErr func(error)) span.Sink {
	var once sync.Once
	return span.SinkFunc(func(s span.Span) {
		if err := c.Add(s.SpanID); err != nil {
			once.Do(func() { onErr(err) })
		}
		next.Emit(s)
	})
}

// Close syncs and closes the file (its lock goes with it).
func (c *File) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return errors.Join(c.f.Sync(), c.f.Close())
}
