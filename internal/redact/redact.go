// Package redact decides what of a command line leaves the tracer
// (--command-args): nothing, the program only, the arguments with secrets
// masked (the default), or everything. Command lines reach spans, the
// console, JSON output, `tracer events` and record files; each of them goes
// through the same Policy.
package redact

import (
	"fmt"
	"net/url"
	"strings"
)

// Policy is what of a command line is kept.
type Policy int

const (
	// Redacted keeps the arguments, with the values of secret-looking
	// flags and assignments masked (the default).
	Redacted Policy = iota
	// None drops the command line.
	None
	// Argv0 keeps the program only.
	Argv0
	// Full keeps everything as it ran.
	Full
)

// Mask replaces a masked value.
const Mask = "***"

// Parse reads a --command-args value.
func Parse(s string) (Policy, error) {
	switch s {
	case "redacted", "":
		return Redacted, nil
	case "none":
		return None, nil
	case "argv0":
		return Argv0, nil
	case "full":
		return Full, nil
	}
	return Redacted, fmt.Errorf("--command-args %q: want none, argv0, redacted or full", s)
}

func (p Policy) String() string {
	switch p {
	case None:
		return "none"
	case Argv0:
		return "argv0"
	case Full:
		return "full"
	}
	return "redacted"
}

// Args applies the policy to a command line. The result is a new slice
// (nil for None, or for an empty command line); args is not modified.
func (p Policy) Args(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	switch p {
	case None:
		return nil
	case Argv0:
		return []string{args[0]}
	case Full:
		return append([]string(nil), args...)
	}
	out := make([]string, len(args))
	maskNext := false
	for i, a := range args {
		switch {
		case maskNext:
			out[i] = Mask
			maskNext = false
		case i == 0:
			out[i] = a
		default:
			out[i], maskNext = arg(a)
		}
	}
	return out
}

// arg masks one argument, and tells whether the next one is the value of a
// secret flag given as two arguments (--password secret).
func arg(a string) (string, bool) {
	if k, v, ok := strings.Cut(a, "="); ok {
		if secretName(k) {
			return k + "=" + Mask, false
		}
		return k + "=" + credentialsInURL(v), false
	}
	if strings.HasPrefix(a, "-") {
		name := strings.TrimLeft(a, "-")
		// -p<password>: the mysql/psql-style short form.
		if strings.HasPrefix(a, "-p") && !strings.HasPrefix(a, "--") && len(a) > 2 {
			return "-p" + Mask, false
		}
		return a, secretName(name)
	}
	return credentialsInURL(a), false
}

// secretName tells a flag or variable name that holds a secret.
func secretName(k string) bool {
	k = strings.ToLower(strings.TrimLeft(k, "-"))
	if k == "" {
		return false
	}
	for _, w := range []string{"password", "passwd", "pwd", "secret", "token", "apikey", "api_key", "api-key",
		"credential", "private_key", "private-key", "access_key", "access-key", "auth", "key", "pass"} {
		if k == w || strings.HasSuffix(k, "_"+w) || strings.HasSuffix(k, "-"+w) || strings.HasSuffix(k, "."+w) ||
			strings.HasPrefix(k, w+"_") || strings.HasPrefix(k, w+"-") || len(w) > 4 && strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// credentialsInURL masks the password of a URL's userinfo
// (scheme://user:secret@host).
func credentialsInURL(s string) string {
	if !strings.Contains(s, "://") || !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); !has {
		return s
	}
	u.User = url.UserPassword(u.User.Username(), Mask)
	return strings.Replace(u.String(), url.QueryEscape(Mask), Mask, 1)
}
