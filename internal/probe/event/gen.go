package event

// The eBPF object and its Go bindings are generated from bpf/ and committed.
// Regenerate with `make generate` (Debian: clang-19, llvm-19, libbpf-dev).
//go:generate go tool bpf2go -cc clang-19 -strip llvm-strip-19 -cflags "-O2 -g -Wall -Werror" -target bpfel -type event_type -type event_header -type exec_event -type cni_env -type cni_env_flags -type fork_event -type exit_event -type signal_event -type signal_deliver_event -type oom_event -type cgroup_event -type event_counter -type signal_budget -type prefix_key -type root_path -type event_origin -type exec_flags -type signal_disposition -type signal_target_flags -type exit_flags -type oom_flags -type ns_info Podchron ../../../bpf/podchron.bpf.c -- -I../../../bpf/include -I../../../bpf
