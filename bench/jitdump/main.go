// Command jitdump writes the JIT image of loaded eBPF programs, one file per
// program, and disassembles it with objdump when objdump is there: what a
// program costs in machine code (its prologue, the instructions its hot
// path runs), where bpftool has no disassembler (built without libbfd).
//
// Usage (root): jitdump -dir DIR ID [ID ...]
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/cilium/ebpf"
)

func main() {
	dir := flag.String("dir", ".", "directory for the images (NAME-ID.bin, and .s when disassembled)")
	flag.Parse()
	if err := run(*dir, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "jitdump:", err)
		os.Exit(1)
	}
}

func run(dir string, ids []string) error {
	if len(ids) == 0 {
		return fmt.Errorf("no program ids")
	}
	for _, s := range ids {
		id, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("program id %q: %w", s, err)
		}
		prog, err := ebpf.NewProgramFromID(ebpf.ProgramID(id))
		if err != nil {
			return fmt.Errorf("program %d: %w", id, err)
		}
		info, err := prog.Info()
		prog.Close()
		if err != nil {
			return fmt.Errorf("program %d: info: %w", id, err)
		}
		insns, ok := info.JitedInsns()
		if !ok || len(insns) == 0 {
			return fmt.Errorf("program %d (%s): no JIT image (JIT off, or not allowed to read it)", id, info.Name)
		}
		lens, _ := info.JitedFuncLens()
		base := filepath.Join(dir, fmt.Sprintf("%s-%d", info.Name, id))
		if err := os.WriteFile(base+".bin", insns, 0o644); err != nil {
			return err
		}
		fmt.Printf("%s: %d bytes, functions %v\n", base+".bin", len(insns), lens)
		if _, err := exec.LookPath("objdump"); err != nil {
			continue
		}
		out, err := exec.Command("objdump", "-D", "-b", "binary", "-mi386:x86-64", base+".bin").Output()
		if err != nil {
			return fmt.Errorf("objdump %s: %w", base+".bin", err)
		}
		if err := os.WriteFile(base+".s", out, 0o644); err != nil {
			return err
		}
	}
	return nil
}
