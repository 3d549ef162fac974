package redact

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Printable renders s so that it can reach a terminal or a log line
// without acting on it: every rune that is not printable (C0 and C1
// controls, DEL, line and paragraph separators, format characters such as
// bidirectional overrides) is written as its Go escape (\x1b, \r, \a,
// \u0085, \u202e), and every byte of invalid UTF-8 as \xNN. Printable text,
// spaces and backslashes are kept as they are, so ordinary text is
// unchanged. Use it for tenant text (command lines, comm, file names,
// cgroup paths, Kubernetes Event messages) printed outside of JSON.
func Printable(s string) string {
	i := firstUnprintable(s)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])>>4, 16))
			b.WriteString(strconv.FormatUint(uint64(s[i])&0xf, 16))
		case r == ' ' || unicode.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\u0085': the escape inside quotes
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// firstUnprintable is the index of the first byte Printable changes, or -1.
func firstUnprintable(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || !unicode.IsPrint(r) {
			return i
		}
		i += n
	}
	return -1
}

// JSONControls rewrites what encoding/json leaves raw and a terminal may
// act on, in JSON it encoded: DEL and the C1 controls (U+0080–U+009F)
// become \u007f and \u0080–\u009f. The bytes can only be inside strings, so
// the JSON decodes to the same values. (encoding/json escapes the C0
// controls, U+2028 and U+2029 and replaces invalid UTF-8 itself.)
func JSONControls(b []byte) []byte {
	i := 0
	for ; i < len(b); i++ {
		if b[i] == 0x7f || b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] < 0xa0 {
			break
		}
	}
	if i == len(b) {
		return b
	}
	out := append(make([]byte, 0, len(b)+16), b[:i]...)
	const hex = "0123456789abcdef"
	for ; i < len(b); i++ {
		switch {
		case b[i] == 0x7f:
			out = append(out, `\u007f`...)
		case b[i] == 0xc2 && i+1 < len(b) && b[i+1] >= 0x80 && b[i+1] < 0xa0:
			out = append(out, '\\', 'u', '0', '0', hex[b[i+1]>>4], hex[b[i+1]&0xf])
			i++
		default:
			out = append(out, b[i])
		}
	}
	return out
}
