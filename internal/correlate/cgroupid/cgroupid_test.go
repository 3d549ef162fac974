package cgroupid

import (
	"errors"
	"strings"
	"testing"
)

const (
	uid   = "0b6e0b3c-1f2d-4a5b-9c8d-7e6f5a4b3c2d"
	uidU  = "0b6e0b3c_1f2d_4a5b_9c8d_7e6f5a4b3c2d" // systemd-escaped
	uid2  = "ae52abf1-0edb-4cb4-93fd-373ed1e2911e"
	uid2U = "ae52abf1_0edb_4cb4_93fd_373ed1e2911e"
	hash  = "f2f8e9eddcd1357dc81d0fa751849cb7" // static pod config hash
	cid   = "bddf098292d7a277c89fecad52c94ef99f3209b11ea21f40616f64b3447da687"
	cid2  = "c1d453877d4905eac27d78399aaf2c140d779543de35c699012729ac464c0cf8"
	host  = "18b1b6b3d72c741ad9e116b5214e55a7c2dd39e2fd2cd21d1815e2b7b09214ce"
)

func TestConstants(t *testing.T) {
	for _, s := range []string{cid, cid2, host} {
		if len(s) != 64 || !ValidContainerID(s) {
			t.Fatalf("bad test id %q", s)
		}
	}
	for _, s := range []string{uid, uid2, hash} {
		if !ValidPodUID(s) {
			t.Fatalf("bad test uid %q", s)
		}
	}
}

type parseCase struct {
	name string
	path string
	want Identity
	err  error // ErrNotKubernetes or ErrMalformed
}

func cgfs(kind Kind, root, qos, podUID, id string) Identity {
	return Identity{Kind: kind, QoS: qos, PodUID: podUID, ContainerID: id, Driver: DriverCgroupfs, Root: root}
}

func sysd(kind Kind, root, qos, podUID, runtime, id string) Identity {
	return Identity{Kind: kind, QoS: qos, PodUID: podUID, ContainerID: id, Runtime: runtime, Driver: DriverSystemd, Root: root}
}

func with(id Identity, f func(*Identity)) Identity { f(&id); return id }

var parseCases = []parseCase{
	// cgroupfs driver.
	{"cgroupfs guaranteed container", "/kubepods/pod" + uid + "/" + cid,
		cgfs(KindContainer, "/kubepods", QoSGuaranteed, uid, cid), nil},
	{"cgroupfs burstable container", "/kubepods/burstable/pod" + uid + "/" + cid,
		cgfs(KindContainer, "/kubepods", QoSBurstable, uid, cid), nil},
	{"cgroupfs besteffort container", "/kubepods/besteffort/pod" + uid2 + "/" + cid2,
		cgfs(KindContainer, "/kubepods", QoSBestEffort, uid2, cid2), nil},
	{"cgroupfs burstable pod", "/kubepods/burstable/pod" + uid,
		cgfs(KindPod, "/kubepods", QoSBurstable, uid, ""), nil},
	{"cgroupfs guaranteed pod", "/kubepods/pod" + uid,
		cgfs(KindPod, "/kubepods", QoSGuaranteed, uid, ""), nil},
	{"cgroupfs root", "/kubepods", cgfs(KindPodsRoot, "/kubepods", "", "", ""), nil},
	{"cgroupfs burstable root", "/kubepods/burstable", cgfs(KindPodsRoot, "/kubepods", QoSBurstable, "", ""), nil},
	{"cgroupfs besteffort root", "/kubepods/besteffort", cgfs(KindPodsRoot, "/kubepods", QoSBestEffort, "", ""), nil},
	{"cgroupfs crio container", "/kubepods/burstable/pod" + uid + "/crio-" + cid,
		with(cgfs(KindContainer, "/kubepods", QoSBurstable, uid, cid), func(i *Identity) { i.Runtime = RuntimeCRIO }), nil},
	{"cgroupfs crio conmon", "/kubepods/burstable/pod" + uid + "/crio-conmon-" + cid,
		with(cgfs(KindContainer, "/kubepods", QoSBurstable, uid, cid), func(i *Identity) { i.Runtime = RuntimeCRIO; i.Conmon = true }), nil},
	{"cgroupfs nested sub", "/kubepods/besteffort/pod" + uid + "/" + cid + "/app/worker",
		with(cgfs(KindContainer, "/kubepods", QoSBestEffort, uid, cid), func(i *Identity) { i.Sub = "/app/worker" }), nil},
	{"cgroupfs static pod hash uid", "/kubepods/burstable/pod" + hash + "/" + cid,
		with(cgfs(KindContainer, "/kubepods", QoSBurstable, hash, cid), func(i *Identity) { i.ConfigHashUID = true }), nil},
	{"cgroupfs short non-hex id", "/kubepods/pod" + uid + "/sandbox0",
		cgfs(KindContainer, "/kubepods", QoSGuaranteed, uid, "sandbox0"), nil},

	// systemd driver.
	{"systemd burstable containerd",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
		sysd(KindContainer, "/kubepods.slice", QoSBurstable, uid, RuntimeContainerd, cid), nil},
	{"systemd guaranteed containerd",
		"/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
		sysd(KindContainer, "/kubepods.slice", QoSGuaranteed, uid, RuntimeContainerd, cid), nil},
	{"systemd besteffort crio",
		"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uid2U + ".slice/crio-" + cid2 + ".scope",
		sysd(KindContainer, "/kubepods.slice", QoSBestEffort, uid2, RuntimeCRIO, cid2), nil},
	{"systemd crio conmon",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/crio-conmon-" + cid + ".scope",
		with(sysd(KindContainer, "/kubepods.slice", QoSBurstable, uid, RuntimeCRIO, cid), func(i *Identity) { i.Conmon = true }), nil},
	{"systemd crio crun container subgroup",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/crio-" + cid + ".scope/container",
		with(sysd(KindContainer, "/kubepods.slice", QoSBurstable, uid, RuntimeCRIO, cid), func(i *Identity) { i.Sub = "/container" }), nil},
	{"systemd docker (cri-dockerd)",
		"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/docker-" + cid + ".scope",
		sysd(KindContainer, "/kubepods.slice", QoSBestEffort, uid, RuntimeDocker, cid), nil},
	{"systemd containerd nested sub",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope/init.scope/x",
		with(sysd(KindContainer, "/kubepods.slice", QoSBurstable, uid, RuntimeContainerd, cid), func(i *Identity) { i.Sub = "/init.scope/x" }), nil},
	{"systemd burstable pod",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice",
		sysd(KindPod, "/kubepods.slice", QoSBurstable, uid, "", ""), nil},
	{"systemd guaranteed pod", "/kubepods.slice/kubepods-pod" + uidU + ".slice",
		sysd(KindPod, "/kubepods.slice", QoSGuaranteed, uid, "", ""), nil},
	{"systemd root", "/kubepods.slice", sysd(KindPodsRoot, "/kubepods.slice", "", "", "", ""), nil},
	{"systemd besteffort root", "/kubepods.slice/kubepods-besteffort.slice",
		sysd(KindPodsRoot, "/kubepods.slice", QoSBestEffort, "", "", ""), nil},
	{"systemd static pod hash uid",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + hash + ".slice/cri-containerd-" + cid + ".scope",
		with(sysd(KindContainer, "/kubepods.slice", QoSBurstable, hash, RuntimeContainerd, cid), func(i *Identity) { i.ConfigHashUID = true }), nil},
	{"systemd upper-case uid is lower-cased",
		"/kubepods.slice/kubepods-pod" + strings.ToUpper(uidU) + ".slice",
		sysd(KindPod, "/kubepods.slice", QoSGuaranteed, uid, "", ""), nil},
	{"systemd dashed uid accepted",
		"/kubepods.slice/kubepods-pod" + uid + ".slice",
		sysd(KindPod, "/kubepods.slice", QoSGuaranteed, uid, "", ""), nil},

	// Nested and custom roots.
	{"kind node view",
		"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
		sysd(KindContainer, "/kubelet.slice/kubelet-kubepods.slice", QoSBestEffort, uid, RuntimeContainerd, cid), nil},
	{"kind guaranteed pod",
		"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" + uidU + ".slice",
		sysd(KindPod, "/kubelet.slice/kubelet-kubepods.slice", QoSGuaranteed, uid, "", ""), nil},
	{"kind host view",
		"/system.slice/docker-" + host + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
		sysd(KindContainer, "/system.slice/docker-"+host+".scope/kubelet.slice/kubelet-kubepods.slice", QoSBurstable, uid, RuntimeContainerd, cid), nil},
	{"k3d docker host id", "/docker/" + host + "/kubepods/burstable/pod" + uid + "/" + cid,
		cgfs(KindContainer, "/docker/"+host+"/kubepods", QoSBurstable, uid, cid), nil},
	{"kind inside a pod: outer pod wins",
		"/kubepods/burstable/pod" + uid + "/" + cid + "/kubepods/besteffort/pod" + uid2 + "/" + cid2,
		with(cgfs(KindContainer, "/kubepods", QoSBurstable, uid, cid), func(i *Identity) {
			i.Sub = "/kubepods/besteffort/pod" + uid2 + "/" + cid2
		}), nil},
	{"containerd literal cgroupsPath",
		"/system.slice/containerd.service/kubepods-burstable-pod" + uidU + ".slice:cri-containerd:" + cid,
		sysd(KindContainer, "/system.slice/containerd.service", QoSBurstable, uid, RuntimeContainerd, cid), nil},
	{"containerd literal guaranteed top level",
		"/kubepods-pod" + uidU + ".slice:cri-containerd:" + cid,
		sysd(KindContainer, "", QoSGuaranteed, uid, RuntimeContainerd, cid), nil},
	{"containerd literal kind prefix besteffort with sub",
		"/system.slice/containerd.service/kubelet-kubepods-besteffort-pod" + uidU + ".slice:cri-containerd:" + cid + "/sub",
		with(sysd(KindContainer, "/system.slice/containerd.service", QoSBestEffort, uid, RuntimeContainerd, cid), func(i *Identity) { i.Sub = "/sub" }), nil},
	{"containerd literal unknown prefix",
		"/system.slice/containerd.service/kubepods-pod" + uidU + ".slice:my-runtime:" + cid,
		sysd(KindContainer, "/system.slice/containerd.service", QoSGuaranteed, uid, "", cid), nil},

	// Mount prefixes and path noise.
	{"v2 absolute", "/sys/fs/cgroup/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope",
		sysd(KindContainer, "/kubepods.slice", QoSGuaranteed, uid, RuntimeContainerd, cid), nil},
	{"v1 memory absolute", "/sys/fs/cgroup/memory/kubepods/burstable/pod" + uid + "/" + cid,
		cgfs(KindContainer, "/kubepods", QoSBurstable, uid, cid), nil},
	{"v1 cpu,cpuacct absolute", "/sys/fs/cgroup/cpu,cpuacct/kubepods/pod" + uid,
		cgfs(KindPod, "/kubepods", QoSGuaranteed, uid, ""), nil},
	{"hybrid unified absolute", "/sys/fs/cgroup/unified/kubepods.slice/kubepods-besteffort.slice",
		sysd(KindPodsRoot, "/kubepods.slice", QoSBestEffort, "", "", ""), nil},
	{"v1 name=systemd absolute", "/sys/fs/cgroup/systemd/kubepods/besteffort/pod" + uid,
		cgfs(KindPod, "/kubepods", QoSBestEffort, uid, ""), nil},
	{"repeated and trailing slashes, dot", "//kubepods//./burstable///pod" + uid + "/" + cid + "/",
		cgfs(KindContainer, "/kubepods", QoSBurstable, uid, cid), nil},
	{"messy mount prefix", "/sys//fs/cgroup/memory//kubepods/pod" + uid + "/",
		cgfs(KindPod, "/kubepods", QoSGuaranteed, uid, ""), nil},
	{"relative path", "kubepods/besteffort/pod" + uid,
		cgfs(KindPod, "/kubepods", QoSBestEffort, uid, ""), nil},
	{"NUL-terminated BPF buffer", "/kubepods/pod" + uid + "/" + cid + "\x00\x00garbage/\xff",
		cgfs(KindContainer, "/kubepods", QoSGuaranteed, uid, cid), nil},

	// Not Kubernetes.
	{"root", "/", Identity{}, ErrNotKubernetes},
	{"mount root", "/sys/fs/cgroup", Identity{}, ErrNotKubernetes},
	{"mount memory root", "/sys/fs/cgroup/memory/", Identity{}, ErrNotKubernetes},
	{"system service", "/system.slice/containerd.service", Identity{}, ErrNotKubernetes},
	{"user session", "/user.slice/user-1000.slice/session-3.scope", Identity{}, ErrNotKubernetes},
	{"docker container", "/system.slice/docker-" + cid + ".scope", Identity{}, ErrNotKubernetes},
	{"kubepods lookalike", "/kubepods-extra/burstable/pod" + uid, Identity{}, ErrNotKubernetes},
	{"colon but not literal", "/system.slice/a:b:c", Identity{}, ErrNotKubernetes},
	{"invalid utf8", "/\xff\xfe/\xc0", Identity{}, ErrNotKubernetes},

	// Malformed.
	{"empty", "", Identity{}, ErrMalformed},
	{"only NUL", "\x00/kubepods", Identity{}, ErrMalformed},
	{"dotdot", "/kubepods/../kubepods/pod" + uid, Identity{}, ErrMalformed},
	{"namespace escape", "/../../kubepods/pod" + uid, Identity{}, ErrMalformed},
	{"too long", "/kubepods/" + strings.Repeat("a", MaxPathLen), Identity{}, ErrMalformed},
	{"bad uid", "/kubepods/burstable/podnotauid/" + cid, Identity{}, ErrMalformed},
	{"uid wrong dash positions", "/kubepods/pod0b6e0b3c1-f2d-4a5b-9c8d-7e6f5a4b3c2d", Identity{}, ErrMalformed},
	{"uid non-hex", "/kubepods/pod0b6e0b3c-1f2d-4a5b-9c8d-7e6f5a4b3c2g", Identity{}, ErrMalformed},
	{"unknown qos", "/kubepods/guaranteed/pod" + uid, Identity{}, ErrMalformed},
	{"upper-case container id", "/kubepods/pod" + uid + "/" + strings.ToUpper(cid), Identity{}, ErrMalformed},
	{"container id too long", "/kubepods/pod" + uid + "/" + strings.Repeat("a", MaxContainerIDLen+1), Identity{}, ErrMalformed},
	{"empty container id", "/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-.scope", Identity{}, ErrMalformed},
	{"unknown scope prefix", "/kubepods.slice/kubepods-pod" + uidU + ".slice/libpod-" + cid + ".scope", Identity{}, ErrMalformed},
	{"qos mismatch", "/kubepods.slice/kubepods-burstable.slice/kubepods-besteffort-pod" + uidU + ".slice", Identity{}, ErrMalformed},
	{"slice prefix mismatch", "/kubepods.slice/kubelet-kubepods-pod" + uidU + ".slice", Identity{}, ErrMalformed},
	{"cgroupfs name under systemd root", "/kubepods.slice/burstable/pod" + uid, Identity{}, ErrMalformed},
	{"literal bad uid", "/kubepods-burstable-podxyz.slice:cri-containerd:" + cid, Identity{}, ErrMalformed},
	{"literal bad id", "/kubepods-burstable-pod" + uidU + ".slice:cri-containerd:" + cid + ":x", Identity{}, ErrMalformed},
	{"literal bad prefix", "/kubepods-burstable-pod" + uidU + ".slice:CRI:" + cid, Identity{}, ErrMalformed},
}

func TestParse(t *testing.T) {
	for _, tc := range parseCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.path)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("Parse(%q) err = %v, want %v", tc.path, err, tc.err)
				}
				if got != (Identity{}) {
					t.Fatalf("Parse(%q) = %+v with error, want zero identity", tc.path, got)
				}
				if errors.Is(tc.err, ErrMalformed) {
					var pe *ParseError
					if !errors.As(err, &pe) || pe.Reason == "" {
						t.Fatalf("Parse(%q) err = %#v, want *ParseError", tc.path, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) err = %v", tc.path, err)
			}
			if got != tc.want {
				t.Fatalf("Parse(%q)\n got %+v\nwant %+v", tc.path, got, tc.want)
			}
		})
	}
}

func TestCustomRoots(t *testing.T) {
	ps := NewParser("/podchron-test-x7k2/", "ci/nested", "/sys/fs/cgroup/custom.slice", "", "/", "../evil", "/sys/fs/cgroup/unified")
	cases := []parseCase{
		{"custom cgroupfs root", "/podchron-test-x7k2/burstable/pod" + uid + "/" + cid,
			cgfs(KindContainer, "/podchron-test-x7k2", QoSBurstable, uid, cid), nil},
		{"custom cgroupfs root guaranteed pod", "/podchron-test-x7k2/pod" + uid,
			cgfs(KindPod, "/podchron-test-x7k2", QoSGuaranteed, uid, ""), nil},
		{"custom root itself", "/podchron-test-x7k2", cgfs(KindPodsRoot, "/podchron-test-x7k2", "", "", ""), nil},
		{"custom root under a prefix", "/sys/fs/cgroup/unified/system.slice/podchron-test-x7k2/besteffort",
			cgfs(KindPodsRoot, "/system.slice/podchron-test-x7k2", QoSBestEffort, "", ""), nil},
		{"multi-component custom root", "/ci/nested/besteffort/pod" + uid + "/" + cid,
			cgfs(KindContainer, "/ci/nested", QoSBestEffort, uid, cid), nil},
		{"custom systemd root", "/custom.slice/custom-burstable.slice/custom-burstable-pod" + uidU + ".slice/crio-" + cid + ".scope",
			sysd(KindContainer, "/custom.slice", QoSBurstable, uid, RuntimeCRIO, cid), nil},
		{"custom systemd root literal", "/system.slice/containerd.service/custom-pod" + uidU + ".slice:cri-containerd:" + cid,
			sysd(KindContainer, "/system.slice/containerd.service", QoSGuaranteed, uid, RuntimeContainerd, cid), nil},
		{"defaults still recognised", "/kubepods/pod" + uid, cgfs(KindPod, "/kubepods", QoSGuaranteed, uid, ""), nil},
		{"prefix of custom root is not a root", "/podchron-test-x7k2x/pod" + uid, Identity{}, ErrNotKubernetes},
		{"partial multi-component root", "/ci/nestedx/pod" + uid, Identity{}, ErrNotKubernetes},
		{"bad shape under custom root", "/podchron-test-x7k2/whatever", Identity{}, ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ps.Parse(tc.path)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Parse(%q)\n got %+v, %v\nwant %+v", tc.path, got, err, tc.want)
			}
		})
	}
	if _, err := Parse("/podchron-test-x7k2/pod" + uid); !errors.Is(err, ErrNotKubernetes) {
		t.Fatalf("default parser accepted custom root: %v", err)
	}
	if len(ps.roots) != 3 {
		t.Fatalf("roots = %+v, want 3 (empty, /, .. and mount root ignored)", ps.roots)
	}
}

func TestAncestor(t *testing.T) {
	sysPod := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice"
	sysCtr := sysPod + "/cri-containerd-" + cid + ".scope"
	cases := []struct {
		path  string
		level Kind
		want  string
		err   error
	}{
		{sysCtr + "/a/b", KindContainer, sysCtr, nil},
		{sysCtr + "/a/b", KindPod, sysPod, nil},
		{sysCtr + "/a/b", KindPodsRoot, "/kubepods.slice", nil},
		{"/sys/fs/cgroup" + sysCtr, KindContainer, sysCtr, nil},
		{sysCtr, KindContainer, sysCtr, nil},
		{"/docker/" + host + "/kubepods/pod" + uid + "/" + cid + "/x", KindPod, "/docker/" + host + "/kubepods/pod" + uid, nil},
		{sysPod, KindContainer, "", ErrNoAncestor},
		{sysPod, KindUnknown, "", ErrNoAncestor},
		{"/kubepods/burstable", KindPod, "", ErrNoAncestor},
		{"/kubepods/burstable", KindPodsRoot, "/kubepods", nil},
		{"/x/kubepods-pod" + uidU + ".slice:cri-containerd:" + cid + "/y", KindContainer, "/x/kubepods-pod" + uidU + ".slice:cri-containerd:" + cid, nil},
		{"/x/kubepods-pod" + uidU + ".slice:cri-containerd:" + cid, KindPod, "", ErrNoAncestor},
		{"/system.slice", KindContainer, "", ErrNotKubernetes},
	}
	for _, tc := range cases {
		got, _, err := Ancestor(tc.path, tc.level)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("Ancestor(%q, %v) = %q, %v; want %q, %v", tc.path, tc.level, got, err, tc.want, tc.err)
		}
	}
	// The container ancestor parses to the same identity without Sub.
	_, id, _ := Ancestor(sysCtr+"/a", KindContainer)
	a, _, _ := Ancestor(sysCtr+"/a", KindContainer)
	id2, err := Parse(a)
	id.Sub = ""
	if err != nil || id2 != id {
		t.Fatalf("ancestor identity %+v, %v; want %+v", id2, err, id)
	}
}

func TestFormat(t *testing.T) {
	cases := []struct{ got, want string }{
		{CgroupfsContainerPath("", QoSGuaranteed, uid, cid), "/kubepods/pod" + uid + "/" + cid},
		{CgroupfsContainerPath("/kubepods", QoSBurstable, uid, cid), "/kubepods/burstable/pod" + uid + "/" + cid},
		{CgroupfsContainerPath("podchron-test-x/", QoSBestEffort, uid, cid), "/podchron-test-x/besteffort/pod" + uid + "/" + cid},
		{CgroupfsPodPath("", "", uid), "/kubepods/pod" + uid},
		{SystemdContainerPath(QoSBurstable, uid, RuntimeContainerd, cid),
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"},
		{SystemdContainerPath(QoSGuaranteed, uid, RuntimeCRIO, cid), "/kubepods.slice/kubepods-pod" + uidU + ".slice/crio-" + cid + ".scope"},
		{SystemdContainerPath("", hash, RuntimeDocker, cid), "/kubepods.slice/kubepods-pod" + hash + ".slice/docker-" + cid + ".scope"},
		{SystemdContainerPath(QoSBestEffort, uid, "", cid),
			"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice/" + cid + ".scope"},
		{SystemdPodPath(QoSBestEffort, uid), "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + uidU + ".slice"},
		{SystemdContainerPathIn("/kubelet.slice/kubelet-kubepods.slice", QoSBestEffort, uid, RuntimeContainerd, cid),
			"/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"},
		{SystemdPodPathIn("/kubelet.slice/kubelet-kubepods.slice/", "", uid), "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" + uidU + ".slice"},
	}
	for i, tc := range cases {
		if tc.got != tc.want {
			t.Errorf("case %d:\n got %s\nwant %s", i, tc.got, tc.want)
		}
	}
}

// TestFormatRoundTrip checks that every combination the Format helpers can
// build parses back to the identity it was built from.
func TestFormatRoundTrip(t *testing.T) {
	for _, u := range []string{uid, uid2, hash} {
		for _, q := range []string{QoSGuaranteed, QoSBurstable, QoSBestEffort} {
			for _, rt := range []string{"", RuntimeContainerd, RuntimeCRIO, RuntimeDocker} {
				for _, rc := range roundTripRoots {
					path, want := rc.build(q, u, rt, cid)
					got, err := rc.parser.Parse(path)
					if err != nil || got != want {
						t.Errorf("Parse(%q)\n got %+v, %v\nwant %+v", path, got, err, want)
					}
				}
			}
		}
	}
}

type roundTripRoot struct {
	parser *Parser
	build  func(qos, uid, runtime, id string) (string, Identity)
}

func cgroupfsBuilder(root string) func(qos, uid, runtime, id string) (string, Identity) {
	return func(qos, uid, _, id string) (string, Identity) {
		want := cgfs(KindContainer, root, qos, uid, id)
		want.ConfigHashUID = len(uid) == 32
		arg := root
		if arg == DefaultCgroupfsRoot {
			arg = "" // exercise the default
		}
		return CgroupfsContainerPath(arg, qos, uid, id), want
	}
}

func systemdBuilder(root string) func(qos, uid, runtime, id string) (string, Identity) {
	return func(qos, uid, runtime, id string) (string, Identity) {
		want := sysd(KindContainer, root, qos, uid, runtime, id)
		want.ConfigHashUID = len(uid) == 32
		if root == DefaultSystemdRoot {
			return SystemdContainerPath(qos, uid, runtime, id), want
		}
		return SystemdContainerPathIn(root, qos, uid, runtime, id), want
	}
}

var roundTripRoots = []roundTripRoot{
	{defaultParser, cgroupfsBuilder(DefaultCgroupfsRoot)},
	{defaultParser, cgroupfsBuilder("/docker/" + host + "/kubepods")},
	{NewParser("podchron-test-q9"), cgroupfsBuilder("/podchron-test-q9")},
	{defaultParser, systemdBuilder(DefaultSystemdRoot)},
	{defaultParser, systemdBuilder("/kubelet.slice/kubelet-kubepods.slice")},
	{NewParser("/podchron.slice"), systemdBuilder("/podchron.slice")},
}

func TestParseProcCgroup(t *testing.T) {
	v2 := "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope\n"
	v1 := "12:pids:/kubepods/burstable/pod" + uid + "/" + cid + "\n" +
		"11:memory:/kubepods/burstable/pod" + uid + "/" + cid + "\n" +
		"4:cpu,cpuacct:/kubepods/burstable/pod" + uid + "/" + cid + "\n" +
		"1:name=systemd:/kubepods/burstable/pod" + uid + "/" + cid + "\n"

	pc, err := ParseProcCgroup([]byte(v2))
	if err != nil || !pc.HasUnified || pc.HasMemory || pc.V1 != nil || pc.Unified != v2[3:len(v2)-1] {
		t.Fatalf("v2: %+v, %v", pc, err)
	}
	path, id, err := Choose(pc)
	if err != nil || path != pc.Unified || id.Kind != KindContainer || id.Driver != DriverSystemd {
		t.Fatalf("v2 choose: %q %+v %v", path, id, err)
	}

	pc, err = ParseProcCgroup([]byte(v1))
	if err != nil || pc.HasUnified || !pc.HasMemory || pc.V1["cpuacct"] != pc.Memory || pc.V1["name=systemd"] != pc.Memory || len(pc.V1) != 5 {
		t.Fatalf("v1: %+v, %v", pc, err)
	}
	path, id, err = Choose(pc)
	if err != nil || path != "/kubepods/burstable/pod"+uid+"/"+cid || id.PodUID != uid || id.ContainerID != cid {
		t.Fatalf("v1 choose: %q %+v %v", path, id, err)
	}

	// Hybrid host, cgroupfs driver: unified path is the runtime's service
	// cgroup; the memory path carries the identity.
	hy := v1 + "0::/system.slice/containerd.service\n"
	pc, err = ParseProcCgroup([]byte(hy))
	if err != nil || !pc.HasUnified || !pc.HasMemory {
		t.Fatalf("hybrid: %+v, %v", pc, err)
	}
	path, id, err = Choose(pc)
	if err != nil || path != pc.Memory || id.Kind != KindContainer {
		t.Fatalf("hybrid choose: %q %+v %v", path, id, err)
	}

	// Hybrid host, systemd driver: both carry it, unified wins.
	hy2 := "0::/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope (deleted)\r\n" +
		"7:memory:/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope\n\n"
	pc, err = ParseProcCgroup([]byte(hy2))
	if err != nil || !pc.UnifiedDeleted || strings.Contains(pc.Unified, "deleted") {
		t.Fatalf("hybrid2: %+v, %v", pc, err)
	}
	path, _, err = Choose(pc)
	if err != nil || path != pc.Unified {
		t.Fatalf("hybrid2 choose: %q %v", path, err)
	}

	// Path containing ':' (containerd literal form).
	lit := "0::/system.slice/containerd.service/kubepods-pod" + uidU + ".slice:cri-containerd:" + cid + "\n"
	pc, err = ParseProcCgroup([]byte(lit))
	if err != nil {
		t.Fatal(err)
	}
	if _, id, err = Choose(pc); err != nil || id.ContainerID != cid {
		t.Fatalf("literal: %+v %v", id, err)
	}

	// Not Kubernetes, and malformed-beats-not-kubernetes.
	pc, _ = ParseProcCgroup([]byte("0::/user.slice/user-1000.slice/session-2.scope\n"))
	if path, _, err = Choose(pc); !errors.Is(err, ErrNotKubernetes) || path != pc.Unified {
		t.Fatalf("non-k8s choose: %q %v", path, err)
	}
	pc, _ = ParseProcCgroup([]byte("0::/init.scope\n3:memory:/kubepods/pod" + uid + "/UPPER\n"))
	if path, _, err = Choose(pc); !errors.Is(err, ErrMalformed) || path != "/init.scope" {
		t.Fatalf("malformed choose: %q %v", path, err)
	}
	if pc, err = ParseProcCgroup([]byte("5::/odd\n0::/x\n")); err != nil || pc.Unified != "/x" || pc.V1 != nil {
		t.Fatalf("odd v1 line: %+v %v", pc, err)
	}
	if _, _, err = Choose(ProcCgroup{}); !errors.Is(err, ErrNotKubernetes) {
		t.Fatalf("empty choose: %v", err)
	}

	for _, bad := range []string{"", "\n\n", "garbage\n", "0:/x\n", "x::/y\n", "5::/y\n", "3:memory\n", strings.Repeat("0::/x\n", MaxProcCgroupLen)} {
		if _, err := ParseProcCgroup([]byte(bad)); !errors.Is(err, ErrMalformed) {
			t.Errorf("ParseProcCgroup(%.40q) err = %v, want ErrMalformed", bad, err)
		}
	}
}

func TestParseAllocs(t *testing.T) {
	cgfsPath := "/kubepods/burstable/pod" + uid + "/" + cid
	sysPath := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"
	for _, c := range []struct {
		path string
		max  float64
	}{{cgfsPath, 0}, {sysPath, 1}, {"/system.slice/sshd.service", 0}} {
		if n := testing.AllocsPerRun(100, func() { _, _ = Parse(c.path) }); n > c.max {
			t.Errorf("Parse(%q): %v allocs, want <= %v", c.path, n, c.max)
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{KindUnknown: "unknown", KindPodsRoot: "pods-root", KindPod: "pod", KindContainer: "container", 99: "unknown"} {
		if k.String() != want {
			t.Errorf("%d.String() = %q", k, k.String())
		}
	}
}

func BenchmarkParse(b *testing.B) {
	paths := []struct{ name, path string }{
		{"systemd", "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"},
		{"cgroupfs", "/kubepods/burstable/pod" + uid + "/" + cid},
		{"kind-nested", "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope"},
		{"sysfs-v1-messy", "/sys/fs/cgroup/memory//kubepods/burstable/pod" + uid + "/" + cid + "/"},
		{"not-kubernetes", "/system.slice/containerd.service"},
	}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(p.path); err != nil && p.name != "not-kubernetes" {
					b.Fatal(err)
				}
			}
		})
	}
}
