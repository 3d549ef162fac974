package cgroupid

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

var fuzzParser = NewParser("podchron-test-q9", "/podchron.slice")

// FuzzParse checks, for an arbitrary path:
//   - Parse never panics, returns a zero Identity with ErrNotKubernetes or an
//     ErrMalformed-wrapping error, or a consistent Identity otherwise
//     (containers have a valid ID and pod UID, pods a valid UID, ...);
//   - cleaning noise (repeated/trailing slashes, "." components, a
//     /sys/fs/cgroup/unified prefix) does not change the result;
//   - Ancestor(KindContainer) parses back to the same identity without Sub;
//
// and, for identities built from the other arguments, that the Format
// helpers' paths parse back to exactly that identity.
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases {
		f.Add(tc.path, uint8(len(tc.name)), []byte(tc.name), tc.name)
	}
	f.Add("/podchron-test-q9/burstable/pod"+uid+"/"+cid, uint8(0xff), []byte(uid), cid)
	f.Add("/podchron.slice/podchron-pod"+uidU+".slice/crio-"+cid+".scope", uint8(0x5a), []byte{}, "")

	f.Fuzz(func(t *testing.T, path string, sel uint8, uidBytes []byte, rawID string) {
		checkParse(t, fuzzParser, path)
		checkRoundTrip(t, sel, uidBytes, rawID)
	})
}

func checkParse(t *testing.T, ps *Parser, path string) {
	id, err := ps.Parse(path)
	if err != nil {
		if id != (Identity{}) {
			t.Fatalf("Parse(%q): non-zero identity %+v with error %v", path, id, err)
		}
		if !errors.Is(err, ErrNotKubernetes) && !errors.Is(err, ErrMalformed) {
			t.Fatalf("Parse(%q): unexpected error %v", path, err)
		}
		_ = err.Error()
		return
	}
	checkIdentity(t, path, id)

	// Cleaning noise must not change anything. normalize strips exactly one
	// mount prefix, so prefixing the normalised path with one is neutral.
	p, _ := normalize(path)
	noisy := "/sys/fs/cgroup/unified/./" + strings.ReplaceAll(p, "/", "//") + "/"
	if len(noisy) <= MaxPathLen {
		id2, err := ps.Parse(noisy)
		if err != nil || id2 != id {
			t.Fatalf("Parse(%q) = %+v, %v\nParse(%q) = %+v", noisy, id2, err, path, id)
		}
	}

	if id.Kind == KindContainer {
		anc, id3, err := ps.Ancestor(path, KindContainer)
		if err != nil || id3 != id || !strings.HasSuffix(p, id.Sub) || anc != p[:len(p)-len(id.Sub)] {
			t.Fatalf("Ancestor(%q) = %q, %+v, %v", path, anc, id3, err)
		}
		id4, err := ps.Parse(anc)
		want := id
		want.Sub = ""
		if err != nil || id4 != want {
			t.Fatalf("Parse(ancestor %q) = %+v, %v; want %+v", anc, id4, err, want)
		}
	}
}

func checkIdentity(t *testing.T, path string, id Identity) {
	fail := func(why string) { t.Fatalf("Parse(%q) = %+v: %s", path, id, why) }
	if id.Driver != DriverSystemd && id.Driver != DriverCgroupfs {
		fail("bad driver")
	}
	switch id.Kind {
	case KindPodsRoot:
		if id.QoS != "" && id.QoS != QoSBurstable && id.QoS != QoSBestEffort {
			fail("bad root QoS")
		}
		if id.PodUID != "" || id.ContainerID != "" || id.Runtime != "" || id.Sub != "" || id.Conmon || id.ConfigHashUID {
			fail("root with pod/container fields")
		}
	case KindPod, KindContainer:
		if id.QoS != QoSGuaranteed && id.QoS != QoSBurstable && id.QoS != QoSBestEffort {
			fail("bad QoS")
		}
		if !ValidPodUID(id.PodUID) || id.ConfigHashUID != (len(id.PodUID) == 32) {
			fail("invalid pod UID")
		}
		if id.Kind == KindPod {
			if id.ContainerID != "" || id.Runtime != "" || id.Sub != "" || id.Conmon {
				fail("pod with container fields")
			}
			break
		}
		if id.ContainerID == "" || !ValidContainerID(id.ContainerID) {
			fail("invalid container ID")
		}
		if id.Sub != "" && (id.Sub[0] != '/' || strings.HasSuffix(id.Sub, "/") || strings.Contains(id.Sub, "//")) {
			fail("unclean Sub")
		}
		if id.Conmon && id.Runtime != RuntimeCRIO {
			fail("conmon without crio")
		}
	default:
		fail("KindUnknown without error")
	}
	if id.Root != "" && (id.Root[0] != '/' || strings.HasSuffix(id.Root, "/")) {
		fail("unclean Root")
	}
}

// checkRoundTrip builds a container path with the Format helpers from fuzzed
// ingredients and checks that it parses back to the identity it encodes.
func checkRoundTrip(t *testing.T, sel uint8, uidBytes []byte, rawID string) {
	var u [16]byte
	copy(u[:], uidBytes)
	h := hex.EncodeToString(u[:])
	podUID := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	if sel&1 != 0 {
		podUID = h // static pod config hash
	}
	qos := [...]string{QoSGuaranteed, QoSBurstable, QoSBestEffort, QoSBurstable}[sel>>1&3]
	runtime := [...]string{"", RuntimeContainerd, RuntimeCRIO, RuntimeDocker}[sel>>3&3]
	id := rawID
	if !ValidContainerID(id) {
		if len(id) > 32 {
			id = id[:32]
		}
		id = hex.EncodeToString([]byte(id))
		if id == "" {
			id = "0"
		}
	}
	rc := roundTripRoots[int(sel>>5)%len(roundTripRoots)]
	path, want := rc.build(qos, podUID, runtime, id)
	got, err := rc.parser.Parse(path)
	if err != nil || got != want {
		t.Fatalf("round trip Parse(%q)\n got %+v, %v\nwant %+v", path, got, err, want)
	}
	checkParse(t, rc.parser, path)
}

// FuzzParseProcCgroup checks that ParseProcCgroup and Choose never panic and
// that Choose only returns paths present in the input.
func FuzzParseProcCgroup(f *testing.F) {
	f.Add([]byte("0::/kubepods.slice/kubepods-pod" + uidU + ".slice/cri-containerd-" + cid + ".scope\n"))
	f.Add([]byte("12:memory:/kubepods/burstable/pod" + uid + "/" + cid + "\n4:cpu,cpuacct:/x\n1:name=systemd:/y\n0::/system.slice/containerd.service (deleted)\n"))
	f.Add([]byte("0::/a:b:c\r\n\n5::/z"))
	f.Fuzz(func(t *testing.T, content []byte) {
		pc, err := ParseProcCgroup(content)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if !pc.HasUnified && !pc.HasMemory && len(pc.V1) == 0 {
			t.Fatalf("no error but nothing parsed: %+v", pc)
		}
		path, id, err := fuzzParser.Choose(pc)
		if (pc.HasUnified || pc.HasMemory) && path != pc.Unified && path != pc.Memory {
			t.Fatalf("Choose returned foreign path %q for %+v", path, pc)
		}
		if err == nil {
			checkIdentity(t, path, id)
		}
	})
}
