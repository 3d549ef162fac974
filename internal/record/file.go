// Opening a record file safely: the tracer runs as root and the stream
// holds command lines and pod metadata.

package record

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// Create opens path for a new recording, owner-only. It never follows a
// symbolic link at path (O_NOFOLLOW: a link planted there is refused, not
// written through), refuses anything but a regular file with one link (a
// hard link to another file, a FIFO, a device), forces mode 0600 on an
// existing file (fchmod: a file made readable by others keeps no such
// mode) and then empties it.
func Create(path string) (*os.File, error) {
	// O_NONBLOCK: opening a FIFO planted at path must not hang; it is
	// refused below. It does nothing to a regular file.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link: refusing to write through it: %w", path, err)
		}
		return nil, err
	}
	if err := prepare(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// prepare checks what f is, forces its mode and empties it.
func prepare(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && uint64(st.Nlink) > 1 {
		return fmt.Errorf("has %d hard links: refusing to overwrite a file linked elsewhere", st.Nlink)
	}
	if fi.Mode().Perm() != fileMode {
		if err := f.Chmod(fileMode); err != nil {
			return fmt.Errorf("chmod %v: %w", fs.FileMode(fileMode), err)
		}
	}
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	return nil
}

// fileMode is a record file's mode: owner read and write.
const fileMode = 0o600
