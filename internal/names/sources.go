package names

// Source is one of podchron's three sources of facts. Its value is its
// name in a recording (fact.Progress.Source, fact.Start.Progress): that
// spelling is part of the recorded format and must not change. Label is
// its Prometheus label value (podchron_source_up{source}, /readyz), which
// the API server's source spells differently.
type Source string

// The sources.
const (
	SourceKernel  Source = "kernel"  // the eBPF probes
	SourceRuntime Source = "runtime" // the container runtime, over CRI
	SourceAPI     Source = "api"     // the Kubernetes API server
)

// Sources lists the sources, the required one (the kernel) first.
func Sources() []Source { return []Source{SourceKernel, SourceRuntime, SourceAPI} }

// Record is the source's name in a recording and in the model's progress
// bookkeeping: "kernel", "runtime", "api".
func (s Source) Record() string { return string(s) }

// Label is the source's Prometheus label value and health component name:
// "kernel", "runtime", "apiserver".
func (s Source) Label() string {
	if s == SourceAPI {
		return "apiserver"
	}
	return string(s)
}

// String is the recorded name.
func (s Source) String() string { return string(s) }
