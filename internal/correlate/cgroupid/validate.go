// What a container ID and a pod UID may look like.

package cgroupid

// ValidContainerID reports whether s is acceptable as a container ID:
// 1..MaxContainerIDLen bytes of [0-9a-z].
func ValidContainerID(s string) bool {
	if len(s) == 0 || len(s) > MaxContainerIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if charClass[s[i]]&classID == 0 {
			return false
		}
	}
	return true
}

const (
	classID       = 1 << iota // [0-9a-z]
	classLowerHex             // [0-9a-f]
	classHex                  // [0-9a-fA-F]
)

var charClass = func() (t [256]uint8) {
	for c := '0'; c <= '9'; c++ {
		t[c] = classID | classLowerHex | classHex
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = classID
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] |= classLowerHex | classHex
		t[c-'a'+'A'] = classHex
	}
	return t
}()

// ValidPodUID reports whether s is a pod UID in the form Parse returns:
// lower-case hex 8-4-4-4-12 with dashes, or 32 lower-case hex digits (a
// static pod's config hash).
func ValidPodUID(s string) bool {
	switch len(s) {
	case 36:
		for i := 0; i < 36; i++ {
			if isDashPos(i) {
				if s[i] != '-' {
					return false
				}
			} else if !isLowerHex(s[i]) {
				return false
			}
		}
		return true
	case 32:
		for i := 0; i < 32; i++ {
			if !isLowerHex(s[i]) {
				return false
			}
		}
		return true
	}
	return false
}

func isDashPos(i int) bool { return i == 8 || i == 13 || i == 18 || i == 23 }

func isLowerHex(ch byte) bool { return charClass[ch]&classLowerHex != 0 }

func isHex(ch byte) bool { return charClass[ch]&classHex != 0 }

func lower(ch byte) byte {
	if ch >= 'A' && ch <= 'Z' {
		return ch + ('a' - 'A')
	}
	return ch
}

// parseUID parses the UID part of a pod cgroup name: 8-4-4-4-12 hex with
// '-' or '_' separators (the systemd driver escapes '-' as '_'), or 32 hex
// digits (config hash). Upper-case hex is accepted and lower-cased. The
// result allocates only when it differs from the input.
func parseUID(s string) (uid string, hash, ok bool) {
	switch len(s) {
	case 36:
		rewrite := false
		for i := 0; i < 36; i++ {
			ch := s[i]
			if isDashPos(i) {
				if ch == '_' {
					rewrite = true
				} else if ch != '-' {
					return "", false, false
				}
			} else if !isLowerHex(ch) {
				if !isHex(ch) {
					return "", false, false
				}
				rewrite = true
			}
		}
		if !rewrite {
			return s, false, true
		}
		var b [36]byte
		for i := 0; i < 36; i++ {
			if isDashPos(i) {
				b[i] = '-'
			} else {
				b[i] = lower(s[i])
			}
		}
		return string(b[:]), false, true
	case 32:
		rewrite := false
		for i := 0; i < 32; i++ {
			if !isLowerHex(s[i]) {
				if !isHex(s[i]) {
					return "", false, false
				}
				rewrite = true
			}
		}
		if !rewrite {
			return s, true, true
		}
		var b [32]byte
		for i := 0; i < 32; i++ {
			b[i] = lower(s[i])
		}
		return string(b[:]), true, true
	}
	return "", false, false
}
