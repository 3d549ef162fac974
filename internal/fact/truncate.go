package fact

import (
	"strings"
	"unicode/utf8"
)

// Byte caps on tenant-controlled text. A pod's author writes its Events'
// messages (any client that may create Events in the namespace can), its
// probes' and hooks' output, its termination message, its argv and its
// labels; none of these may cost the tracer more than a few KiB, however
// large the tenant makes them. The watcher cuts Events to these caps
// before they enter its cache, the model cuts what it keeps and emits, and
// what is cut is counted on the span that carries the text
// (podchron.text.truncated_bytes).
const (
	// MaxEventMessage: a Kubernetes Event's message.
	MaxEventMessage = 1 << 10
	// MaxEventReason: a Kubernetes Event's reason (the API server allows
	// 128 characters for events.k8s.io; core/v1 has no limit).
	MaxEventReason = 128
	// MaxMessage: probe and hook output, a termination message, a pod's,
	// a condition's or a container state's status message.
	MaxMessage = 1 << 10
	// MaxArgs: a process's argv as exported (process.command_args), the
	// bytes of all its arguments together.
	MaxArgs = 4 << 10
	// MaxLabelValue: each exported label or annotation value.
	MaxLabelValue = 256
)

// Truncate cuts s to at most limit bytes, never inside a UTF-8 sequence (a
// sequence that would straddle the cap is dropped whole), and returns what
// is kept (a copy when cut, so s can be collected) and the number of
// bytes cut. Invalid UTF-8 is cut at the byte.
func Truncate(s string, limit int) (string, int) {
	if limit < 0 {
		limit = 0
	}
	if len(s) <= limit {
		return s, 0
	}
	cut := limit
	// Back up over continuation bytes to the start of the sequence at the
	// cap; keep that sequence only if it fits whole.
	for i := 0; i < utf8.UTFMax && cut > 0 && !utf8.RuneStart(s[cut]); i++ {
		cut--
	}
	if !utf8.RuneStart(s[cut]) {
		cut = limit // not UTF-8 here: cut at the byte
	}
	// A copy: a substring would keep the whole of s alive.
	return strings.Clone(s[:cut]), len(s) - cut
}

// TruncateArgs keeps argv within limit bytes (the arguments' bytes together):
// the arguments that fit whole, then the one that straddles the cap cut
// (Truncate), then none. It returns the kept arguments (args itself when
// nothing is cut) and the bytes cut.
func TruncateArgs(args []string, limit int) ([]string, int) {
	total := 0
	for _, a := range args {
		total += len(a)
	}
	if total <= limit {
		return args, 0
	}
	out := make([]string, 0, len(args))
	left := limit
	for _, a := range args {
		if left <= 0 {
			break
		}
		kept, _ := Truncate(a, left)
		if len(kept) < len(a) {
			if kept != "" {
				out = append(out, kept)
			}
			break
		}
		out = append(out, kept)
		left -= len(kept)
	}
	kept := 0
	for _, a := range out {
		kept += len(a)
	}
	return out, total - kept
}
