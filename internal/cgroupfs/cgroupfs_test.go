package cgroupfs

import (
	"os"
	"testing"
)

const hybrid = `25 30 0:22 / /sys/fs/cgroup rw,relatime shared:5 - tmpfs tmpfs rw,mode=755
26 25 0:23 / /sys/fs/cgroup/cpu rw,relatime shared:6 - cgroup cgroup rw,cpu
29 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory
35 25 0:32 / /sys/fs/cgroup/unified rw,relatime shared:15 - cgroup2 cgroup2 rw
`

const pureV2 = `30 1 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`

const procCgroups = `#subsys_name	hierarchy	num_cgroups	enabled
cpuset	3	1	1
cpu	1	1	1
memory	4	60	1
`

func TestParseMountinfo(t *testing.T) {
	l := parseMountinfo([]byte(hybrid))
	if l.V2Mount != "/sys/fs/cgroup/unified" || l.MemoryMount != "/sys/fs/cgroup/memory" {
		t.Fatalf("hybrid: got %+v", l)
	}
	l = parseMountinfo([]byte(pureV2))
	if l.V2Mount != "/sys/fs/cgroup" || l.MemoryMount != "" {
		t.Fatalf("pure v2: got %+v", l)
	}
	if got := memoryHierarchy([]byte(procCgroups)); got != 4 {
		t.Fatalf("memory hierarchy = %d, want 4", got)
	}
	if got := UnescapeMount(`/mnt/with\040space`); got != "/mnt/with space" {
		t.Fatalf("unescape = %q", got)
	}
}

func TestDetectHost(t *testing.T) {
	l, err := Detect(ModeAuto)
	if err != nil {
		t.Skipf("no cgroups on this host: %v", err)
	}
	if l.Mode == ModeAuto {
		t.Fatal("mode not resolved")
	}
	id, err := l.ID("/")
	if err != nil || id == 0 {
		t.Fatalf("root id = %d, %v", id, err)
	}
	p, err := l.ProcPath(os.Getpid())
	if err != nil || p == "" || p[0] != '/' {
		t.Fatalf("own cgroup path = %q, %v", p, err)
	}
	if _, err := l.ID(p); err != nil {
		t.Fatalf("own cgroup id: %v", err)
	}
}
