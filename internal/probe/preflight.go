//go:build linux

package probe

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

var (
	// ErrPrivileges means the process can neither load BPF programs nor read kernel memory.
	ErrPrivileges = errors.New("insufficient privileges")
	// ErrNoBTF means the kernel exposes no BTF, so CO-RE relocations cannot be resolved.
	ErrNoBTF = errors.New("kernel BTF not available")
	// ErrKernelTooOld means the kernel predates features the probes need.
	ErrKernelTooOld = errors.New("kernel too old")
)

// MinKernel is the oldest kernel the probes support: ring buffers, tp_btf
// and bpf_ktime_get_boot_ns all exist from 5.8.
var MinKernel = [2]int{5, 8}

const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

func hasCap(data [2]unix.CapUserData, c uint) bool {
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// Preflight checks what loading needs and says exactly what is missing.
func Preflight() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	admin := hasCap(data, capSysAdmin)
	if !admin && !(hasCap(data, capBPF) && hasCap(data, capPerfmon)) {
		return fmt.Errorf("%w: run as root, or grant CAP_BPF and CAP_PERFMON (CAP_SYS_ADMIN on kernels before 5.8)", ErrPrivileges)
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return fmt.Errorf("%w: /sys/kernel/btf/vmlinux: %w (the kernel needs CONFIG_DEBUG_INFO_BTF=y)", ErrNoBTF, err)
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return fmt.Errorf("uname: %w", err)
	}
	rel := unix.ByteSliceToString(u.Release[:])
	maj, minor, ok := parseRelease(rel)
	if ok && (maj < MinKernel[0] || maj == MinKernel[0] && minor < MinKernel[1]) {
		return fmt.Errorf("%w: %s, need %d.%d or later", ErrKernelTooOld, rel, MinKernel[0], MinKernel[1])
	}
	return nil
}

func parseRelease(rel string) (maj, minor int, ok bool) {
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	maj, err1 := strconv.Atoi(parts[0])
	m := parts[1]
	if i := strings.IndexFunc(m, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		m = m[:i]
	}
	minor, err2 := strconv.Atoi(m)
	return maj, minor, err1 == nil && err2 == nil
}
