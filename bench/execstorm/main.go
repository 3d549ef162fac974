// Command execstorm joins a cgroup and fork+execs a short program N times in
// a row, then prints how long that took: the load for bench/execstorm.sh.
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
	n := flag.Int("n", 10000, "number of execs")
	cg := flag.String("cgroup", "", "cgroup directory to join first")
	prog := flag.String("exec", "/bin/true", "program to exec")
	flag.Parse()
	if *cg != "" {
		if err := os.WriteFile(filepath.Join(*cg, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "execstorm: join cgroup:", err)
			os.Exit(1)
		}
	}
	attr := &syscall.ProcAttr{Env: []string{}, Files: []uintptr{0, 1, 2}}
	start := time.Now()
	for i := 0; i < *n; i++ {
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
	fmt.Printf("%d %.6f %.1f\n", *n, el.Seconds(), float64(*n)/el.Seconds())
}
