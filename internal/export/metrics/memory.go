package metrics

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podchron/podchron/internal/names"
)

// The parts of the tracer's resident memory (podchron_process_memory_bytes
// {part}). The mapping parts come from /proc/self/smaps (each mapping's Rss);
// the go_* parts split the anonymous mappings by the Go runtime's own
// accounts (runtime/metrics) and anon_other is the rest of them.
const (
	MemBinaryText     = "binary_text"      // the executable's code (r-x), file-backed: clean page cache
	MemBinaryRodata   = "binary_rodata"    // the executable's read-only data (r--): type data, pclntab, strings
	MemBinaryData     = "binary_data"      // the executable's writable data (rw-)
	MemBPFMaps        = "bpf_maps"         // BPF maps mapped into the process: the ring buffer (its data pages are mapped twice, and counted twice)
	MemFilesOther     = "files_other"      // other file-backed and special mappings ([vdso], ...)
	MemGoHeapInuse    = "go_heap_inuse"    // heap spans in use: live and not yet collected objects, and their spans' unused slots
	MemGoHeapFree     = "go_heap_free"     // heap the runtime holds free and has not yet returned to the kernel
	MemGoStacks       = "go_stacks"        // goroutine and OS thread stacks
	MemGoGCMetadata   = "go_gc_metadata"   // the runtime's metadata: span and cache structures, GC bitmaps and work buffers
	MemGoRuntimeOther = "go_runtime_other" // the rest the runtime maps: profiling buckets, trace buffers, ...
	MemAnonOther      = "anon_other"       // anonymous memory the Go runtime does not account for
)

// memoryParts lists the parts in the order they are exported.
var memoryParts = []string{
	MemBinaryText, MemBinaryRodata, MemBinaryData, MemBPFMaps, MemFilesOther,
	MemGoHeapInuse, MemGoHeapFree, MemGoStacks, MemGoGCMetadata, MemGoRuntimeOther, MemAnonOther,
}

var (
	memoryDesc = prometheus.NewDesc("podchron_process_memory_bytes",
		"The tracer's resident memory by part (sums to about process_resident_memory_bytes): "+
			"the executable's mappings (binary_text, binary_rodata, binary_data; clean file pages the kernel can reclaim), "+
			"BPF maps mapped into the process (bpf_maps: the ring buffer, whose data pages are mapped, and counted, twice), "+
			"other files, and the anonymous memory split by the Go runtime's accounts "+
			"(go_heap_inuse, go_stacks, go_heap_free from the heap's arenas, go_gc_metadata, go_runtime_other from the other mappings, "+
			"each at most what the runtime accounts to it) and the rest (anon_other).",
		[]string{names.LabelPart}, nil)
	memoryUpDesc = prometheus.NewDesc("podchron_process_memory_up",
		"1 if /proc/self/smaps could be read at this scrape (podchron_process_memory_bytes), 0 if not.", nil, nil)
)

// MemoryParts is the resident memory by part, in bytes (keys: the Mem* parts).
type MemoryParts map[string]uint64

// Sum is the parts' total.
func (p MemoryParts) Sum() uint64 {
	var s uint64
	for _, v := range p {
		s += v
	}
	return s
}

// goMemSamples are the runtime/metrics the go_* parts sum, by part.
var goMemSamples = map[string][]string{
	MemGoHeapInuse: {"/memory/classes/heap/objects:bytes", "/memory/classes/heap/unused:bytes"},
	MemGoHeapFree:  {"/memory/classes/heap/free:bytes"},
	MemGoStacks:    {"/memory/classes/heap/stacks:bytes", "/memory/classes/os-stacks:bytes"},
	MemGoGCMetadata: {"/memory/classes/metadata/mcache/free:bytes", "/memory/classes/metadata/mcache/inuse:bytes",
		"/memory/classes/metadata/mspan/free:bytes", "/memory/classes/metadata/mspan/inuse:bytes",
		"/memory/classes/metadata/other:bytes"},
	MemGoRuntimeOther: {"/memory/classes/other:bytes", "/memory/classes/profiling/buckets:bytes"},
}

// ReadMemory splits this process's resident memory into parts: the mappings
// of /proc/self/smaps by what they map (exe is the executable's path as the
// kernel shows it; empty: os.Executable), and the anonymous ones by the Go
// runtime's accounts.
func ReadMemory(exe string) (MemoryParts, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("memory: executable: %w", err)
		}
	}
	raw, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	parts, anon, err := parseSmaps(raw, exe)
	if err != nil {
		return nil, err
	}
	splitAnon(parts, anon, readGoMemory())
	return parts, nil
}

// goArenaWindow is how far from a heap object an anonymous mapping may lie
// and count as the Go heap's arenas. The runtime reserves its arenas from
// one hint upward (runtime/malloc.go: 0x00c0<<32 before Go 1.26, a random
// base since), far from where the kernel places its other mappings (near
// the top of the address space), so anonymous mappings near a heap object
// hold heap spans (objects, free spans, goroutine stacks) and those
// elsewhere the runtime's metadata and the rest.
const goArenaWindow = 64 << 30

// heapMark is a heap object whose address tells where the arenas are.
var heapMark *[64]byte

// anonMemory is the resident anonymous memory: in the Go heap's arenas,
// and elsewhere.
type anonMemory struct{ arena, other uint64 }

// parseSmaps sums each mapping's Rss by part; the anonymous mappings'
// totals are returned apart (splitAnon divides them).
func parseSmaps(raw []byte, exe string) (MemoryParts, anonMemory, error) {
	heapMark = new([64]byte)
	mark := uint64(uintptr(unsafe.Pointer(heapMark)))
	parts := MemoryParts{}
	var anon anonMemory
	part, inArena := "", false
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			// A mapping's header: address perms offset dev inode [path].
			path := ""
			if len(f) >= 6 {
				path = strings.Join(f[5:], " ")
			}
			part = mappingPart(f[1], path, exe)
			start, end, _ := strings.Cut(f[0], "-")
			lo, err1 := strconv.ParseUint(start, 16, 64)
			hi, err2 := strconv.ParseUint(end, 16, 64)
			inArena = err1 == nil && err2 == nil && hi+goArenaWindow > mark && lo < mark+goArenaWindow
			continue
		}
		rest, ok := strings.CutPrefix(line, "Rss:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
		if err != nil {
			return nil, anon, fmt.Errorf("memory: smaps: %q: %w", line, err)
		}
		switch {
		case part == "" && inArena:
			anon.arena += kb << 10
		case part == "":
			anon.other += kb << 10
		default:
			parts[part] += kb << 10
		}
	}
	if err := sc.Err(); err != nil {
		return nil, anon, fmt.Errorf("memory: smaps: %w", err)
	}
	return parts, anon, nil
}

// mappingPart is the part a mapping's Rss belongs to ("" for anonymous
// memory).
func mappingPart(perms, path, exe string) string {
	switch {
	case path == "" || strings.HasPrefix(path, "[anon") || path == "[heap]" || strings.HasPrefix(path, "[stack"):
		return ""
	case strings.HasPrefix(path, "anon_inode:bpf"):
		return MemBPFMaps
	case samePath(path, exe):
		switch {
		case strings.Contains(perms, "x"):
			return MemBinaryText
		case strings.Contains(perms, "w"):
			return MemBinaryData
		default:
			return MemBinaryRodata
		}
	default:
		return MemFilesOther
	}
}

// samePath tells whether a mapping's path is the executable (a replaced
// executable reads "<path> (deleted)").
func samePath(path, exe string) bool {
	path = strings.TrimSuffix(path, " (deleted)")
	return path == exe || filepath.Clean(path) == filepath.Clean(exe)
}

// readGoMemory reads the runtime's memory classes, summed by go_* part.
func readGoMemory() MemoryParts {
	var samples []metrics.Sample
	for _, names := range goMemSamples {
		for _, n := range names {
			samples = append(samples, metrics.Sample{Name: n})
		}
	}
	metrics.Read(samples)
	byName := make(map[string]uint64, len(samples))
	for _, s := range samples {
		if s.Value.Kind() == metrics.KindUint64 {
			byName[s.Name] = s.Value.Uint64()
		}
	}
	out := MemoryParts{}
	for part, names := range goMemSamples {
		for _, n := range names {
			out[part] += byName[n]
		}
	}
	return out
}

// splitAnon divides the resident anonymous memory among the Go runtime's
// parts, each at most what the runtime accounts to it (its accounts include
// pages reserved and never touched, which are not resident): the heap's
// arenas among go_heap_inuse, go_stacks and go_heap_free, in that order (the
// heap in use is touched as objects are allocated), the other mappings
// among go_gc_metadata and go_runtime_other; what is left of either is
// anon_other.
func splitAnon(parts MemoryParts, anon anonMemory, goParts MemoryParts) {
	give := func(rest *uint64, k string) {
		v := min(goParts[k], *rest)
		parts[k] = v
		*rest -= v
	}
	for _, k := range []string{MemGoHeapInuse, MemGoStacks, MemGoHeapFree} {
		give(&anon.arena, k)
	}
	for _, k := range []string{MemGoGCMetadata, MemGoRuntimeOther} {
		give(&anon.other, k)
	}
	parts[MemAnonOther] = anon.arena + anon.other
}

// MemoryCollector exports podchron_process_memory_bytes{part}, read at each
// scrape from /proc/self/smaps and runtime/metrics.
type MemoryCollector struct {
	read func() (MemoryParts, error)
	log  *slog.Logger

	mu     sync.Mutex
	failed bool // the last read failed: log the next failure at debug only
}

// NewMemoryCollector reads this process's memory at each scrape. A nil log
// uses slog.Default().
func NewMemoryCollector(log *slog.Logger) *MemoryCollector {
	if log == nil {
		log = slog.Default()
	}
	return &MemoryCollector{read: func() (MemoryParts, error) { return ReadMemory("") }, log: log}
}

// Describe implements prometheus.Collector.
func (c *MemoryCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- memoryDesc
	ch <- memoryUpDesc
}

// Collect implements prometheus.Collector.
func (c *MemoryCollector) Collect(ch chan<- prometheus.Metric) {
	parts, err := c.read()
	c.mu.Lock()
	if err != nil {
		if c.failed {
			c.log.Debug("memory breakdown unreadable", "err", err)
		} else {
			c.log.Warn("memory breakdown unreadable", "err", err)
		}
	}
	c.failed = err != nil
	c.mu.Unlock()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(memoryUpDesc, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(memoryUpDesc, prometheus.GaugeValue, 1)
	for _, p := range memoryParts {
		ch <- prometheus.MustNewConstMetric(memoryDesc, prometheus.GaugeValue, float64(parts[p]), p)
	}
}
