package metrics

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/podchron/podchron/internal/names"
)

// BuildInfo is what podchron_build_info reports.
type BuildInfo struct {
	Version   string // podchron's version
	GoVersion string // the Go toolchain that built it
	Kernel    string // the running kernel's release (uname -r)
}

// CurrentBuildInfo is version with this binary's Go version and the running
// kernel's release ("unknown" if uname fails).
func CurrentBuildInfo(version string) BuildInfo {
	kernel := "unknown"
	var u unix.Utsname
	if err := unix.Uname(&u); err == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	return BuildInfo{Version: version, GoVersion: runtime.Version(), Kernel: kernel}
}

var buildInfoDesc = prometheus.NewDesc("podchron_build_info",
	"Always 1; the labels tell podchron's version, its Go version and the node's kernel.",
	[]string{names.LabelVersion, names.LabelGoVersion, names.LabelKernel}, nil)

// BuildInfoCollector exports podchron_build_info.
type BuildInfoCollector struct {
	m prometheus.Metric
}

// NewBuildInfoCollector exports bi; empty fields read "unknown".
func NewBuildInfoCollector(bi BuildInfo) *BuildInfoCollector {
	or := func(s string) string {
		if s = sanitizeLabelValue(s); s == "" {
			return "unknown"
		}
		return s
	}
	return &BuildInfoCollector{m: prometheus.MustNewConstMetric(buildInfoDesc, prometheus.GaugeValue, 1,
		or(bi.Version), or(bi.GoVersion), or(bi.Kernel))}
}

// Describe implements prometheus.Collector.
func (c *BuildInfoCollector) Describe(ch chan<- *prometheus.Desc) { ch <- buildInfoDesc }

// Collect implements prometheus.Collector.
func (c *BuildInfoCollector) Collect(ch chan<- prometheus.Metric) { ch <- c.m }
