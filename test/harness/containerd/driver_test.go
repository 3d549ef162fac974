package containerd

import "testing"

// TestCgroupfsDriverNames: with the cgroupfs driver a pod's parent is the
// kubelet's directory layout (no QoS level for a guaranteed pod), and no
// QoS is burstable, as with the systemd driver.
func TestCgroupfsDriverNames(t *testing.T) {
	h := &Harness{CgroupRoot: "/kubepods"}
	for qos, want := range map[string]string{
		QOSGuaranteed: "/kubepods/podu-1",
		QOSBestEffort: "/kubepods/besteffort/podu-1",
		QOSBurstable:  "/kubepods/burstable/podu-1",
		"":            "/kubepods/burstable/podu-1",
	} {
		if got := h.CgroupParent(qos, "u-1"); got != want {
			t.Errorf("CgroupParent(%q) = %q, want %q", qos, got, want)
		}
	}
}
