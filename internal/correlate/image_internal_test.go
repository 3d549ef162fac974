package correlate

import "testing"

func TestSplitImage(t *testing.T) {
	for ref, want := range map[string][2]string{
		"busybox":                                 {"busybox", ""},
		"busybox:1.36":                            {"busybox", "1.36"},
		"registry:5000/team/app":                  {"registry:5000/team/app", ""},
		"registry:5000/team/app:v2":               {"registry:5000/team/app", "v2"},
		"app@sha256:0123":                         {"app", ""},
		"ghcr.io/podchron/podchron:dev@sha256:ab": {"ghcr.io/podchron/podchron", "dev"},
		"": {"", ""},
	} {
		if name, tag := splitImage(ref); name != want[0] || tag != want[1] {
			t.Errorf("splitImage(%q) = %q, %q; want %q, %q", ref, name, tag, want[0], want[1])
		}
	}
}
