package pipeline

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/podchron/podchron/internal/fact"
	"github.com/podchron/podchron/internal/fact/kernel"
)

// The kernel's counts are cumulative: each poll reports what is new, per
// cgroup and kind; a count that went down (a budget entry the kernel evicted
// and made again) is all new; nothing new is no report.
func TestLossPollerReportsWhatIsNew(t *testing.T) {
	var lost uint64
	var th []fact.CgroupLoss
	p := lossPoller{
		counters: func() (map[kernel.EventType]kernel.Counter, error) {
			return map[kernel.EventType]kernel.Counter{kernel.EventExec: {Lost: lost}}, nil
		},
		throttled: func() ([]fact.CgroupLoss, error) { return th, nil },
		log:       slog.New(slog.DiscardHandler),
		seen:      map[cgroupKind]uint64{},
	}
	for i, step := range []struct {
		lost uint64
		th   []fact.CgroupLoss
		want string
	}{
		{0, nil, "<nil>"},
		{2, []fact.CgroupLoss{{CgroupID: 7, Kind: "signal", Count: 100}}, "&{2 [{7 signal 100}]}"},
		{2, []fact.CgroupLoss{{CgroupID: 7, Kind: "signal", Count: 100}}, "<nil>"},
		{2, []fact.CgroupLoss{{CgroupID: 7, Kind: "signal", Count: 150}, {CgroupID: 7, Kind: "signal_deliver", Count: 5}}, "&{0 [{7 signal 50} {7 signal_deliver 5}]}"},
		{2, []fact.CgroupLoss{{CgroupID: 7, Kind: "signal", Count: 20}}, "&{0 [{7 signal 20}]}"}, // evicted, made again
	} {
		lost, th = step.lost, step.th
		if got := fmt.Sprint(p.poll()); got != step.want {
			t.Errorf("poll %d: %s, want %s", i, got, step.want)
		}
	}
}
