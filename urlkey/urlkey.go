package urlkey

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nlnwa/whatwg-url/canonicalizer"
	urlerrors "github.com/nlnwa/whatwg-url/errors"
	whatwg "github.com/nlnwa/whatwg-url/url"
	"golang.org/x/net/publicsuffix"
)

// Canonical is the key a URL is stored and checked under: the host a
// browser would ask, then the path it would ask for, without scheme, port,
// user, query, fragment or trailing slash.
// "HTTPS://User@WWW.Example.com:8443/a/b/?q#f" becomes
// "www.example.com/a/b", and so do "www.example.com/x/../a/b",
// "www.example.com/a/%62" and "www.example.com\a\b". A line that is not
// a URL with a host, or is longer than MaxLength before its query, is
// ErrBadURL.
func Canonical(raw string) (string, error) {
	host, path, err := splitURL(raw)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(host) + len(path))
	b.WriteString(host)
	for s := range strings.FieldsFuncSeq(path, isSlash) {
		b.WriteByte('/')
		b.WriteString(s)
	}
	return b.String(), nil
}

// Rollup is the keys a URL is checked under, so that a whole domain, a
// host or a path can be listed: most specific first, the host with each
// path prefix (longest first), the host, and each parent domain down to the
// registrable one (per the public suffix list, so a.b.example.co.uk stops
// at example.co.uk). The first is Canonical's key.
func Rollup(raw string) ([]string, error) {
	host, path, err := splitURL(raw)
	if err != nil {
		return nil, err
	}
	segments := strings.FieldsFunc(path, isSlash)
	var candidates []string
	for i := len(segments); i > 0; i-- {
		candidates = append(candidates, host+"/"+strings.Join(segments[:i], "/"))
	}
	candidates = append(candidates, host)
	registrable, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return candidates, nil // an IP address or a bare suffix: no parents
	}
	for parent := host; parent != registrable; {
		_, parent, _ = strings.Cut(parent, ".")
		candidates = append(candidates, parent)
	}
	return candidates, nil
}

// isSlash splits a path into its non-empty segments.
func isSlash(r rune) bool { return r == '/' }

// browserURL reads a URL as a browser does (the WHATWG URL Standard:
// backslashes are slashes, tabs and newlines are dropped, dot segments are
// resolved, a host is lowercased, an international one is put in punycode
// and a number in any base is an IPv4 address), then undoes the disguises
// Google Safe Browsing undoes: percent-escapes are decoded until none is
// left and encoded again one way, and dots around and doubled in a host go.
// A spam URL written any of these ways is then stored and found as one.
var browserURL = canonicalizer.New(
	whatwg.WithLaxHostParsing(),
	whatwg.WithAcceptInvalidCodepoints(),
	whatwg.WithPercentEncodeSinglePercentSign(),
	whatwg.WithPreParseHostFunc(func(_ *whatwg.Url, host string) string { return trimDots(host) }),
	canonicalizer.WithRepeatedPercentDecoding(),
)

// trimDots drops a host's leading and trailing dots and makes each run of
// dots in it one.
func trimDots(host string) string {
	host = strings.Trim(host, ".")
	for strings.Contains(host, "..") {
		host = strings.ReplaceAll(host, "..", ".")
	}
	return host
}

// splitURL returns the host and the escaped path a browser would ask for
// the URL, a scheme of http taken where it has none.
func splitURL(raw string) (host, path string, err error) {
	raw = beforeQuery(strings.TrimSpace(raw))
	if len(raw) > MaxLength {
		return "", "", fmt.Errorf("%w: %.40q...: %d bytes before its query, more than the %d a URL may have", ErrBadURL, raw, len(raw), MaxLength)
	}
	if host, path, ok := plainURL(raw); ok {
		return host, path, nil
	}
	return parseURL(raw)
}

// beforeQuery is raw up to its query or fragment, which go whatever they
// hold: they change neither the host nor the path a browser reads. raw is
// left whole where a space or a control character comes before them, which
// a browser would keep there, but drop at the end.
func beforeQuery(raw string) string {
	if end := strings.IndexAny(raw, "?#"); end == 0 || end > 0 && raw[end-1] > ' ' {
		return raw[:end]
	}
	return raw
}

// MaxLength is the longest URL, up to its query, that Canonical and Rollup
// read: servers
// commonly refuse a longer request line (RFC 9110 asks them to take 8000
// bytes at least), and browserURL's time grows with the square of a URL's
// length (about 0.1 s for 8 KiB of nested escapes, %252525...).
const MaxLength = 8 << 10

// parseURL is splitURL through browserURL, for any URL.
func parseURL(raw string) (host, path string, err error) {
	u, err := parseBrowserURL(withHTTP(escapeInvalidUTF8(raw)))
	if err != nil {
		reason := err.Error()
		if t := urlerrors.Type(err); t != "" {
			reason = strings.TrimSuffix(string(t), ".") // without the parser's "Error: " and its copy of the URL
		}
		return "", "", fmt.Errorf("%w: %q: %s", ErrBadURL, raw, reason)
	}
	host = strings.TrimSuffix(strings.TrimPrefix(u.Hostname(), "["), "]") // an IPv6 address without brackets
	if host == "" {
		return "", "", fmt.Errorf("%w: %q", ErrBadURL, raw)
	}
	return host, u.Pathname(), nil
}

// parseBrowserURL is browserURL.Parse, with a panic of the parser's (it
// indexed out of range on bytes that are not UTF-8) an error: a hostile
// line must not bring down the service or the add that reads it.
func parseBrowserURL(raw string) (u *whatwg.Url, err error) {
	defer func() {
		if r := recover(); r != nil {
			u, err = nil, fmt.Errorf("the URL parser failed on it: %v", r)
		}
	}()
	return browserURL.Parse(raw)
}

// escapeInvalidUTF8 percent-encodes the bytes of raw that are not UTF-8,
// which the parser cannot read, as a client sends them: the server gets
// the same bytes from "\x97" as from "%97", and so does the filter.
func escapeInvalidUTF8(raw string) string {
	if utf8.ValidString(raw) {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); {
		r, size := utf8.DecodeRuneInString(raw[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, "%%%02X", raw[i])
		} else {
			b.WriteString(raw[i : i+size])
		}
		i += size
	}
	return b.String()
}

// withHTTP gives a URL the scheme browserURL reads as a browser reads a web
// address: one of the web's own schemes is kept, another before "//" is
// replaced (its host and path are what is checked), and a URL without one
// (spam.example/win, or spam.example:8080/win) gets http.
func withHTTP(raw string) string {
	scheme, rest, ok := strings.Cut(raw, ":")
	switch {
	case ok && webSchemes[strings.ToLower(scheme)]:
		return raw
	case ok && isScheme(scheme) && strings.HasPrefix(rest, "//"):
		return "http:" + rest
	default:
		return "http://" + raw
	}
}

// webSchemes are the schemes whose URLs the WHATWG standard reads with a
// host (its special schemes, file aside).
var webSchemes = map[string]bool{"http": true, "https": true, "ws": true, "wss": true, "ftp": true}

// isScheme says whether s can be a URL's scheme: a letter, then letters,
// digits, '+', '-' and '.'.
func isScheme(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isLetter(c) && !isDigit(c) && c != '+' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }

// plainURL splits the URLs nearly every key is, in a small fraction of
// browserURL's time: an http or https URL, or one without a scheme, whose
// bytes a browser would read as they are, and whose host is a plain domain
// name. For anything else (a percent-escape, a backslash, a dot segment, an
// address, a name in punycode, a character outside the plain set) it says
// no, and browserURL decides. FuzzURL holds the two to one answer. raw has
// no query or fragment (beforeQuery).
func plainURL(raw string) (host, path string, ok bool) {
	for i := 0; i < len(raw); i++ {
		if !plainByte[raw[i]] {
			return "", "", false
		}
	}
	scheme, rest, _ := strings.Cut(withHTTP(raw), "://")
	if s := strings.ToLower(scheme); s != "http" && s != "https" {
		return "", "", false // ftp, or a web scheme without "//"
	}
	end := strings.IndexByte(rest, '/')
	if end < 0 {
		end = len(rest)
	}
	authority := rest[:end]
	path = rest[end:]
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:] // the user goes
	}
	host, port, hasPort := strings.Cut(authority, ":")
	if hasPort && !isPort(port) {
		return "", "", false
	}
	if !plainDomain(host) || !plainPath(path) {
		return "", "", false
	}
	return strings.ToLower(host), path, true
}

// plainByte holds the bytes plainURL reads as they are in a host or a path:
// letters, digits and the characters a browser leaves alone there. '%',
// '\', spaces, control characters and other bytes are not.
var plainByte = func() (set [256]bool) {
	for c := range 256 {
		set[c] = isLetter(byte(c)) || isDigit(byte(c)) || strings.IndexByte("-._~!$&'()*+,;=:@/", byte(c)) >= 0
	}
	return set
}()

// isPort says whether s is a port a browser accepts, which it then drops.
func isPort(s string) bool {
	if s == "" {
		return true
	}
	_, err := strconv.ParseUint(s, 10, 16)
	return err == nil
}

// plainDomain: labels of letters, digits and hyphens, none empty or in
// punycode, and the last beginning with a letter, as every top-level domain
// does: a browser reads one that looks like a number in any base ("1",
// "0x1", even "-0") as part of an IPv4 address.
func plainDomain(host string) bool {
	if host == "" {
		return false
	}
	var last string
	for label := range strings.SplitSeq(host, ".") {
		if label == "" || len(label) >= 4 && strings.EqualFold(label[:4], "xn--") {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isLetter(c) && !isDigit(c) && c != '-' {
				return false
			}
		}
		last = label
	}
	return isLetter(last[0])
}

// plainPath: no segment is "." or "..", which a browser resolves.
func plainPath(path string) bool {
	for s := range strings.SplitSeq(path, "/") {
		if s == "." || s == ".." {
			return false
		}
	}
	return true
}
