// Command execstorm joins a cgroup and fork+execs a short program N times in
// a row (or for a duration), then prints how long that took: the load for
// bench/execstorm.sh.
//
// With -cgroup it joins that cgroup and re-executes itself there first, so
// the storm looks like a container whose PID 1 (this process, exec'd in the
// container's cgroup) spawns short-lived children.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 10000, "number of execs (with -duration: at most)")
	dur := flag.Duration("duration", 0, "stop after this long (0: after -n execs)")
	cg := flag.String("cgroup", "", "cgroup directory to join first (then re-exec in it)")
	prog := flag.String("exec", "/bin/true", "program to exec")
	flag.Parse()
	if *cg != "" {
		if err := os.WriteFile(filepath.Join(*cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "execstorm: join cgroup:", err)
			os.Exit(1)
		}
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "execstorm:", err)
			os.Exit(1)
		}
		args := []string{self, "-n", strconv.Itoa(*n), "-duration", dur.String(), "-exec", *prog}
		err = syscall.Exec(self, args, os.Environ())
		fmt.Fprintln(os.Stderr, "execstorm: re-exec:", err)
		os.Exit(1)
	}
	attr := &syscall.ProcAttr{Env: []string{}, Files: []uintptr{0, 1, 2}}
	start := time.Now()
	done := 0
	for ; done < *n; done++ {
		if *dur > 0 && done%64 == 0 && time.Since(start) >= *dur {
			break
		}
		pid, err := syscall.ForkExec(*prog, []string{*prog}, attr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "execstorm:", err)
			os.Exit(1)
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
			fmt.Fprintln(os.Stderr, "execstorm: wait:", err)
			os.Exit(1)
		}
	}
	el := time.Since(start)
	fmt.Printf("%d %.6f %.1f\n", done, el.Seconds(), float64(done)/el.Seconds())
}
