// Secrets inside one value: headers, JSON texts, connection strings, URLs.

package redact

import (
	"net/url"
	"regexp"
	"strings"
)

// value masks the secrets inside a value: the right side of an
// assignment, a flag's value or a positional argument.
func value(v string) string {
	if h, ok := header(v); ok {
		return h
	}
	if isJSON(v) {
		return jsonSecrets(v)
	}
	if c, ok := connString(v); ok {
		return c
	}
	return querySecrets(userinfo(v))
}

// headerRE is an HTTP header line: curl -H 'Authorization: Bearer x'.
var headerRE = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]*):([ \t]*)\S`)

// header masks the value of a secret HTTP header (Authorization, Cookie,
// X-Api-Key, ...), and tells whether a is one.
func header(a string) (string, bool) {
	m := headerRE.FindStringSubmatch(a)
	if m == nil {
		return "", false
	}
	switch name := strings.ToLower(m[1]); {
	case name == "authorization", name == "proxy-authorization", name == "set-cookie", secretName(name):
		return m[1] + ":" + m[2] + Mask, true
	}
	return "", false
}

// isJSON tells a value that is a JSON object or array.
func isJSON(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "{") || strings.HasPrefix(s, "[")
}

// jsonPairRE is a JSON member with a string, number or literal value.
var jsonPairRE = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"(\s*:\s*)(?:"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false)`)

// jsonSecrets masks the values of the secret members of a JSON text
// ({"password":"x"} -> {"password":"***"}), its layout kept.
func jsonSecrets(s string) string {
	return jsonPairRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := jsonPairRE.FindStringSubmatch(m)
		if !secretName(sub[1]) {
			return m
		}
		return `"` + sub[1] + `"` + sub[2] + `"` + Mask + `"`
	})
}

// connString masks the secret parts of a connection string
// (Server=db;User Id=sa;Password=x;), and tells whether it masked any.
func connString(s string) (string, bool) {
	if !strings.ContainsRune(s, ';') || !strings.ContainsRune(s, '=') {
		return s, false
	}
	parts := strings.Split(s, ";")
	masked := false
	for i, p := range parts {
		k, _, ok := strings.Cut(p, "=")
		if ok && secretParam(strings.TrimSpace(k)) {
			parts[i] = k + "=" + Mask
			masked = true
		}
	}
	return strings.Join(parts, ";"), masked
}

// secretParam tells the name of a secret query parameter or connection
// string part: the secret names, and signatures and keys (X-Amz-Signature,
// sig, AccountKey).
func secretParam(k string) bool {
	l := strings.ToLower(k)
	return secretName(k) || l == "sig" || l == "signature" || strings.HasSuffix(l, "-signature") ||
		strings.HasSuffix(l, "key") || strings.HasSuffix(l, "sharedaccesssignature")
}

// querySecrets masks the values of the secret query parameters of a URL
// (a presigned URL's signature and token).
func querySecrets(s string) string {
	q := strings.IndexByte(s, '?')
	if q < 0 || !strings.ContainsRune(s[q:], '=') {
		return s
	}
	end := len(s)
	if h := strings.IndexByte(s[q:], '#'); h >= 0 {
		end = q + h
	}
	params := strings.Split(s[q+1:end], "&")
	masked := false
	for i, p := range params {
		k, _, ok := strings.Cut(p, "=")
		if key, err := url.QueryUnescape(k); ok && err == nil && secretParam(key) {
			params[i] = k + "=" + Mask
			masked = true
		}
	}
	if !masked {
		return s
	}
	return s[:q+1] + strings.Join(params, "&") + s[end:]
}

// noSchemeRE is user:password@host without a scheme (a proxy, a Redis or
// AMQP address, a Go MySQL DSN user:password@tcp(db:3306)/shop): not an image digest (name:tag@sha256:...), not an scp
// address (user@host:path).
var noSchemeRE = regexp.MustCompile(`^([A-Za-z0-9._~%+-]+):([^@\s]+)@([A-Za-z0-9.-]+(?::[0-9]+|\([^()]*\))?(?:[/?#].*)?)$`)

// userinfo masks the password of a URL's userinfo
// (scheme://user:secret@host), also one that holds '/', '?' or '#', and of
// user:secret@host.
func userinfo(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		if m := noSchemeRE.FindStringSubmatch(s); m != nil {
			return m[1] + ":" + Mask + "@" + m[3]
		}
		return s
	}
	if !strings.Contains(s[i:], "@") {
		return s
	}
	u, err := url.Parse(s)
	if err == nil && u.Opaque == "" {
		if u.User == nil {
			return s
		}
		if _, has := u.User.Password(); !has {
			return s
		}
		u.User = url.UserPassword(u.User.Username(), Mask)
		return strings.Replace(u.String(), url.QueryEscape(Mask), Mask, 1)
	}
	// Not a URL to net/url (a password with '/', '?' or '#' unescaped), or
	// one inside another (jdbc:mysql://user:password@db/shop).
	rest := s[i+3:]
	colon, at := strings.IndexByte(rest, ':'), strings.LastIndexByte(rest, '@')
	if colon <= 0 || at < colon || strings.ContainsAny(rest[:colon], "/?#@") {
		return s
	}
	return s[:i+3] + rest[:colon+1] + Mask + rest[at:]
}
