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
	host, segments, err := splitURL(raw)
	if err != nil {
		return "", err
	}
	return strings.Join(append([]string{host}, segments...), "/"), nil
}

// rollupCandidates are the forms a URL is checked under, most specific
// first: the host with each path prefix (longest first), the host, and each
// parent domain down to the registrable one (per the public suffix list, so
// a.b.example.co.uk stops at example.co.uk).
func rollupCandidates(raw string) ([]string, error) {
	host, segments, err := splitURL(raw)
	if err != nil {
		return nil, err
	}
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

func splitURL(raw string) (host string, segments []string, err error) {
	raw = strings.TrimSpace(raw)
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", errBadURL, err)
	}
	host = strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return "", nil, fmt.Errorf("%w: %q", errBadURL, raw)
	}
	for _, s := range strings.Split(u.EscapedPath(), "/") {
		if s != "" {
			segments = append(segments, s)
		}
	}
	return host, segments, nil
}
