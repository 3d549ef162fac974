package metrics

import (
	"bufio"
	"errors"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// vmRSS is this process's resident memory as the kernel counts it
// (VmRSS, what process_resident_memory_bytes reports).
func vmRSS(t *testing.T) uint64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}

func readParts(t *testing.T) MemoryParts {
	t.Helper()
	p, err := ReadMemory("")
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The parts sum to the process's RSS as the kernel counts it.
func TestMemoryPartsSumToRSS(t *testing.T) {
	// Collect and return the free heap now: after a bare runtime.GC the
	// background scavenger went on returning pages between the two reads
	// (CI, 2026-11-28: parts 16,600 KiB read before an RSS of 15,004).
	debug.FreeOSMemory()
	rss0 := vmRSS(t)
	p := readParts(t)
	rss1 := vmRSS(t)
	sum := p.Sum()
	t.Logf("RSS %d KiB before the parts, %d after; parts %d KiB: %v", rss0>>10, rss1>>10, sum>>10, p)
	for _, part := range memoryParts {
		if _, ok := p[part]; !ok && part != MemBPFMaps && part != MemBinaryData {
			t.Errorf("part %s missing", part)
		}
	}
	if p[MemBinaryText] == 0 || p[MemBinaryRodata] == 0 {
		t.Errorf("the test binary's text (%d) and rodata (%d) are resident, yet read 0", p[MemBinaryText], p[MemBinaryRodata])
	}
	if p[MemGoHeapInuse] == 0 || p[MemGoGCMetadata] == 0 {
		t.Errorf("heap in use %d, metadata %d: the runtime holds both", p[MemGoHeapInuse], p[MemGoGCMetadata])
	}
	// Within 10 % of the RSS read on either side: RSS moves while smaps is
	// read (a thread's stack, goroutines other tests left, the read's own
	// buffer).
	lo, hi := min(rss0, rss1), max(rss0, rss1)
	lo, hi = lo-lo/10, hi+hi/10
	if sum < lo || sum > hi {
		t.Errorf("parts sum to %d KiB, RSS is %d..%d KiB (want within 10 %%)", sum>>10, rss0>>10, rss1>>10)
	}
}

var sink [][]byte

// Allocating and touching 64 MiB moves the heap part by as much, and the
// anonymous memory the parts count with it.
func TestMemoryHeapPartMoves(t *testing.T) {
	runtime.GC()
	before := readParts(t)
	const n = 64 << 20
	for range n / (1 << 20) {
		b := make([]byte, 1<<20)
		for i := range b {
			b[i] = 1
		}
		sink = append(sink, b)
	}
	after := readParts(t)
	grew := int64(after[MemGoHeapInuse]) - int64(before[MemGoHeapInuse])
	if grew < n*95/100 || grew > 2*n {
		t.Errorf("go_heap_inuse grew by %d KiB after 64 MiB allocated, want 61 MiB to 128 MiB", grew>>10)
	}
	if d := int64(after.Sum()) - int64(before.Sum()); d < n*9/10 {
		t.Errorf("the parts' sum grew by %d KiB after 64 MiB allocated and touched", d>>10)
	}
	sink = nil
	runtime.GC()
	freed := readParts(t)
	if freed[MemGoHeapInuse] >= after[MemGoHeapInuse]-n/2 {
		t.Errorf("go_heap_inuse %d KiB after the 64 MiB became garbage and a GC ran (was %d KiB)",
			freed[MemGoHeapInuse]>>10, after[MemGoHeapInuse]>>10)
	}
	t.Logf("go_heap_inuse: %d → %d → %d KiB", before[MemGoHeapInuse]>>10, after[MemGoHeapInuse]>>10, freed[MemGoHeapInuse]>>10)
}

// A BPF ring buffer mapped by its reader is bpf_maps, twice its size (its
// data pages are mapped twice, as the kernel does for a ring buffer).
func TestMemoryBPFRingBuffer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a BPF map")
	}
	if err := rlimit.RemoveMemlock(); err != nil {
		t.Skipf("memlock: %v", err)
	}
	before := readParts(t)
	const size = 1 << 20
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.RingBuf, MaxEntries: size})
	if err != nil {
		t.Skipf("the kernel makes no BPF ring buffer here: %v", err)
	}
	defer m.Close()
	rd, err := ringbuf.NewReader(m)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	after := readParts(t)
	grew := after[MemBPFMaps] - before[MemBPFMaps]
	if grew < 2*size || grew > 2*size+64<<10 {
		t.Errorf("bpf_maps grew by %d KiB with a %d KiB ring buffer mapped, want twice its size and its two pages of positions", grew>>10, size>>10)
	}
}

func TestMemoryCollectorExports(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(NewMemoryCollector(nil))
	n, err := testutil.GatherAndCount(reg, "podchron_process_memory_bytes")
	if err != nil {
		t.Fatal(err)
	}
	if n != len(memoryParts) {
		t.Errorf("%d series, want one per part (%d)", n, len(memoryParts))
	}
	if v := testutil.ToFloat64(prometheus.CollectorFunc(func(ch chan<- prometheus.Metric) {
		c := NewMemoryCollector(nil)
		c.read = func() (MemoryParts, error) { return nil, errors.New("no smaps") }
		c.Collect(ch)
	})); v != 0 {
		t.Errorf("podchron_process_memory_up = %v when smaps is unreadable, want 0", v)
	}
}

func TestMappingPart(t *testing.T) {
	for _, tc := range []struct{ perms, path, want string }{
		{"r-xp", "/tracer", MemBinaryText},
		{"r--p", "/tracer", MemBinaryRodata},
		{"rw-p", "/tracer", MemBinaryData},
		{"r-xp", "/tracer (deleted)", MemBinaryText},
		{"r--s", "anon_inode:bpf-map", MemBPFMaps},
		{"rw-p", "", ""},
		{"rw-p", "[heap]", ""},
		{"rw-p", "[stack]", ""},
		{"r-xp", "[vdso]", MemFilesOther},
		{"r--p", "/usr/lib/locale/C.utf8", MemFilesOther},
	} {
		if got := mappingPart(tc.perms, tc.path, "/tracer"); got != tc.want {
			t.Errorf("mappingPart(%q, %q) = %q, want %q", tc.perms, tc.path, got, tc.want)
		}
	}
}
