package containerd

import (
	"testing"

	"github.com/podchron/podchron/internal/correlate/cgroupid"
)

// TestSystemdDriverNames: the slices and scopes the harness tells a
// systemd-driver pod by are the kubelet's and runc's spelling, and the
// tracer's cgroup parser reads the pod and the container back from them
// with the harness's root as its root.
func TestSystemdDriverNames(t *testing.T) {
	const uid, id = "8d2e1c4a-57b6-4e0f-9a3b-2c1d0e9f8a7b", "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	h := &Harness{CgroupRoot: "/podchrone2eab12cd34.slice", CgroupDriver: CgroupDriverSystemd}
	for _, c := range []struct {
		qos, pod string
	}{
		{QOSBurstable, "/podchrone2eab12cd34.slice/podchrone2eab12cd34-burstable.slice/podchrone2eab12cd34-burstable-pod8d2e1c4a_57b6_4e0f_9a3b_2c1d0e9f8a7b.slice"},
		{QOSBestEffort, "/podchrone2eab12cd34.slice/podchrone2eab12cd34-besteffort.slice/podchrone2eab12cd34-besteffort-pod8d2e1c4a_57b6_4e0f_9a3b_2c1d0e9f8a7b.slice"},
		{QOSGuaranteed, "/podchrone2eab12cd34.slice/podchrone2eab12cd34-pod8d2e1c4a_57b6_4e0f_9a3b_2c1d0e9f8a7b.slice"},
		// No QoS is the harness's default, burstable, as with cgroupfs.
		{"", "/podchrone2eab12cd34.slice/podchrone2eab12cd34-burstable.slice/podchrone2eab12cd34-burstable-pod8d2e1c4a_57b6_4e0f_9a3b_2c1d0e9f8a7b.slice"},
	} {
		p := &Pod{CgroupParent: h.CgroupParent(c.qos, uid)}
		if p.CgroupParent != c.pod {
			t.Errorf("%s: CgroupParent %q, want %q", c.qos, p.CgroupParent, c.pod)
		}
		cg := h.ContainerCgroup(p, id)
		if want := c.pod + "/cri-containerd-" + id + ".scope"; cg != want {
			t.Errorf("%s: ContainerCgroup %q, want %q", c.qos, cg, want)
		}
		ident, err := cgroupid.NewParser(h.CgroupRoot).Parse(cg)
		if err != nil {
			t.Fatalf("%s: the tracer's parser refuses %s: %v", c.qos, cg, err)
		}
		if ident.PodUID != uid || ident.ContainerID != id || ident.Driver != cgroupid.DriverSystemd || ident.Root != h.CgroupRoot {
			t.Errorf("%s: parsed %s as %+v", c.qos, cg, ident)
		}
	}
}

func TestSystemdDriverRoot(t *testing.T) {
	for _, root := range []string{"/kubepods.slice", "/podchrone2eab12.slice", "podchron.slice"} {
		if err := checkRootSlice(root); err != nil {
			t.Errorf("checkRootSlice(%q): %v", root, err)
		}
	}
	for _, root := range []string{"/podchron-e2e.slice", "/a.slice/b.slice", "/kubepods", "/.slice", ""} {
		if err := checkRootSlice(root); err == nil {
			t.Errorf("checkRootSlice(%q) accepted", root)
		}
	}
	// A cgroupfs harness is unchanged.
	h := &Harness{CgroupRoot: "/podchron-e2e-ab12", CgroupDriver: CgroupDriverCgroupfs}
	p := &Pod{CgroupParent: h.CgroupParent(QOSBurstable, "u-1")}
	if p.CgroupParent != "/podchron-e2e-ab12/burstable/podu-1" || h.ContainerCgroup(p, "c1") != "/podchron-e2e-ab12/burstable/podu-1/c1" {
		t.Errorf("cgroupfs: parent %q container %q", p.CgroupParent, h.ContainerCgroup(p, "c1"))
	}
}
