package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/net/publicsuffix"
)

var errBadURL = errors.New("not a URL with a host")

// canonicalURL is the form in which URLs are stored and checked: the host
// lowercased, then the path, without scheme, port, user, query, fragment or
// trailing slash. "HTTPS://User@WWW.Example.com:8443/a/b/?q#f" becomes
// "www.example.com/a/b".
func canonicalURL(raw string) (string, error) {
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

// rollupCandidates are the forms a URL is checked under, most specific
// first: the host with each path prefix (longest first), the host, and each
// parent domain down to the registrable one (per the public suffix list, so
// a.b.example.co.uk stops at example.co.uk).
func rollupCandidates(raw string) ([]string, error) {
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

// splitURL returns the URL's host, lowercased and without a trailing dot,
// and its escaped path.
func splitURL(raw string) (host, path string, err error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", errBadURL, err)
	}
	host = strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", "", fmt.Errorf("%w: %q", errBadURL, raw)
	}
	return host, u.EscapedPath(), nil
}
