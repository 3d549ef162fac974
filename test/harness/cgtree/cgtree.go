// Package cgtree handles a test's own cgroup trees: the processes in them,
// and their removal. The test harnesses (containerd, nested) share it.
package cgtree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PIDs returns the processes in any cgroup at or below the directories
// (each a cgroup in some hierarchy), sorted, each once.
func PIDs(dirs []string) []int {
	seen := map[int]bool{}
	for _, d := range dirs {
		_ = filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err != nil || !de.IsDir() {
				return nil
			}
			b, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 0 {
					seen[pid] = true
				}
			}
			return nil
		})
	}
	pids := make([]int, 0, len(seen))
	for p := range seen {
		pids = append(pids, p)
	}
	slices.Sort(pids)
	return pids
}

// Remove removes the directories and every cgroup below them, deepest first
// (a cgroup directory goes only by rmdir, once its children are gone). A
// cgroup emptied a moment ago may still be busy: each rmdir is retried for
// up to 5 s.
func Remove(dirs []string) error {
	var errs []error
	for _, d := range dirs {
		var all []string
		_ = filepath.WalkDir(d, func(p string, de fs.DirEntry, err error) error {
			if err == nil && de.IsDir() {
				all = append(all, p)
			}
			return nil
		})
		slices.SortFunc(all, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
		for _, p := range all {
			if err := rmdir(p); err != nil {
				errs = append(errs, fmt.Errorf("rmdir %s: %w", p, err))
			}
		}
	}
	return errors.Join(errs...)
}

func rmdir(p string) error {
	var err error
	for i := 0; i < 100; i++ {
		if err = unix.Rmdir(p); err == nil || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}
