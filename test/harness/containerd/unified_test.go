package containerd

import (
	"maps"
	"testing"
)

// TestUnifiedOOMGroup: on a pure cgroup v2 host every container gets
// memory.oom.group=1 as from a kubelet, unless SingleProcessOOMKill or the
// spec sets the key itself; elsewhere only what the spec gives.
func TestUnifiedOOMGroup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pureV2 bool
		spec   ContainerSpec
		want   map[string]string
	}{
		{"v2", true, ContainerSpec{}, map[string]string{OOMGroupKey: "1"}},
		{"v2, other keys kept", true, ContainerSpec{Unified: map[string]string{"memory.high": "1000000"}},
			map[string]string{OOMGroupKey: "1", "memory.high": "1000000"}},
		{"v2, singleProcessOOMKill", true, ContainerSpec{SingleProcessOOMKill: true}, nil},
		{"v2, the spec's own value", true, ContainerSpec{Unified: map[string]string{OOMGroupKey: "0"}}, map[string]string{OOMGroupKey: "0"}},
		{"hybrid or v1", false, ContainerSpec{}, nil},
		{"hybrid or v1, the spec's", false, ContainerSpec{Unified: map[string]string{"memory.high": "1"}}, map[string]string{"memory.high": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			before := maps.Clone(spec.Unified)
			h := &Harness{PureV2: tc.pureV2}
			if got := h.unified(spec); !maps.Equal(got, tc.want) {
				t.Errorf("unified = %v, want %v", got, tc.want)
			}
			if !maps.Equal(spec.Unified, before) {
				t.Errorf("the spec's map was changed: %v, was %v", spec.Unified, before)
			}
		})
	}
}
