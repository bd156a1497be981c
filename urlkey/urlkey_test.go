package urlkey

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCanonical(t *testing.T) {
	for raw, want := range map[string]string{
		"HTTPS://User:pw@WWW.Example.COM:8443/a/B/?q=1#frag": "www.example.com/a/B",
		"example.com":                 "example.com",
		"example.com/":                "example.com",
		"http://[::1]:80/x":           "::1/x",
		"spam.example./path//to/page": "spam.example/path/to/page",
		"ftp://spam.example/win":      "spam.example/win",
		"foo://Spam.Example/win":      "spam.example/win",
		"spam.example:8080/win":       "spam.example/win",
		"http:///spam.example/win":    "spam.example/win", // as a browser reads it
		"Spam.Example/W%49N":          "spam.example/WIN",
		"spam.example/win?q=a%20b\\c": "spam.example/win",
		// Any scheme with "//" is read as http's; what is not a scheme
		// is a host.
		"svn+ssh://Spam.example/win":  "spam.example/win",
		"coap-tcp://spam.example/win": "spam.example/win",
		"a.z9://spam.example/win":     "spam.example/win",
		"a_b://spam.example/win":      "a_b/spam.example/win",
		"1a://spam.example/win":       "1a/spam.example/win",
		// A space or control character before the query stays, escaped.
		"http://spam.example/win ?q=1":    "spam.example/win%20",
		"http://spam.example/win\x01?q=1": "spam.example/win%01",
	} {
		got, err := Canonical(raw)
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
	for _, raw := range []string{"", "http://", "http://[fe80::1%25en0]/", "spam.example:99999/x", "mailto:x"} {
		_, err := Canonical(raw)
		require.ErrorIs(t, err, ErrBadURL, raw)
		assert.Contains(t, err.Error(), strconv.Quote(raw)+": ", "names the URL, then why")
		assert.NotContains(t, err.Error(), "Error:", "without the parser's prefix")
	}
	_, err := Canonical("spam.example:99999/x")
	assert.ErrorContains(t, err, "port is outside the range")

	// Up to 8 KiB before the query, whatever the query's length.
	long := "spam.example/" + strings.Repeat("a", MaxLength-len("spam.example/"))
	got, err := Canonical(long + "?" + strings.Repeat("q", 1<<20))
	require.NoError(t, err)
	assert.Equal(t, long, got)
	_, err = Canonical(long + "b")
	require.ErrorIs(t, err, ErrBadURL)
	assert.ErrorContains(t, err, "8193 bytes before its query, more than the 8192 a URL may have")
}

// A spam URL disguised as a browser would still follow it is stored and
// found as the URL itself: otherwise a spammer evades the filter by
// writing the URL another way.
func TestCanonicalUndoesDisguises(t *testing.T) {
	for want, disguises := range map[string][]string{
		"spam.example/win": {
			"spam.example/x/../win", "spam.example/./win", "spam.example/x/%2e%2E/win", // dot segments
			"spam.example/%77in", "spam.example/%2577in", "sp%61m.example/win", // percent-escapes, twice too
			`spam.example\win`, `http:\\spam.example\win`, "http:spam.example/win", // backslashes, slashes left out
			"spam.exa\tmple/w\nin", "spam..example/win", ".spam.example./win", // tabs, newlines, dots
			"http://SPAM.example:80/win?utm=1#top", "user:pw@spam.example/win", "//spam.example//win",
			"http://evil.example@spam.example/win", "spam.example/wi%6E", // the host after the user; either case of an escape
		},
		"192.168.1.1/win":              {"http://3232235777/win", "http://0xC0A80101/win", "http://0300.0250.1.1/win", "192.168.257/win"},
		"xn--bcher-kva.example/%C3%A4": {"http://bücher.example/ä", "BÜCHER.example/%C3%A4", "xn--bcher-kva.example/ä", "xn--bcher-kva.example/%c3%a4"},
		"::1/x":                        {"http://[::1]:80/x", "[0:0::1]/x"},
	} {
		for _, raw := range disguises {
			got, err := Canonical(raw)
			require.NoError(t, err, raw)
			assert.Equal(t, want, got, "%q", raw)
		}
	}
}

// The URLs nearly every key is are split without the WHATWG parser, which
// takes many times as long; the ones it must read are left to it.
func TestPlainURLsSkipTheParser(t *testing.T) {
	for _, raw := range []string{
		"spam.example/win", "https://User:pw@WWW.Example.com:8443/a/b/?q=%20#f", "HTTP://a-b.example.co.uk",
		"spam.example:8080/~x/y.html", "foo://spam.example/win",
		"http://z9.example/", "http://1a.example/", "http://@spam.example/",
	} {
		_, _, ok := plainURL(beforeQuery(raw))
		assert.True(t, ok, raw)
	}
	for _, raw := range []string{
		"spam.example/%77in", "spam.example/x/../win", `spam.example\win`, "http:spam.example/win", "ftp://spam.example/",
		"bücher.example", "xn--bcher-kva.example", "3232235777", "a.0x10", "spam..example", "spam.example:99999", "[::1]/x",
		"xn--.example", "ex_ample.example", "spam.9z",
	} {
		_, _, ok := plainURL(raw)
		assert.False(t, ok, raw)
	}
}

// Bytes that are not UTF-8 are read as their percent-escapes: the parser
// panics on them (index out of range), and a panic of its is an error.
func TestURLsThatAreNotUTF8(t *testing.T) {
	got, err := Canonical("spam.example/\x97win")
	require.NoError(t, err)
	assert.Equal(t, "spam.example/%97win", got)
	same, err := Canonical("spam.example/%97win")
	require.NoError(t, err)
	assert.Equal(t, got, same)

	_, err = parseBrowserURL("http://\x97\x97")
	assert.ErrorContains(t, err, "the URL parser failed on it")
}

func TestRollup(t *testing.T) {
	got, err := Rollup("https://a.b.example.co.uk/x/y?z")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"a.b.example.co.uk/x/y", "a.b.example.co.uk/x", "a.b.example.co.uk",
		"b.example.co.uk", "example.co.uk",
	}, got, "parents stop at the registrable domain")

	got, err = Rollup("http://a.b.пример.рф/x")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"a.b.xn--e1afmkfd.xn--p1ai/x", "a.b.xn--e1afmkfd.xn--p1ai", "b.xn--e1afmkfd.xn--p1ai", "xn--e1afmkfd.xn--p1ai",
	}, got, "an international name rolls up in punycode, to its registrable domain")

	got, err = Rollup("http://10.0.0.1/p")
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1/p", "10.0.0.1"}, got)
}

// FuzzURL checks, for any line, that neither Canonical nor Rollup panics
// or loops; that the plain way and the parser's read a plain URL alike,
// and the query changes neither's host or path; and that Rollup looks first
// for the key Canonical stores: otherwise a URL added would not be found.
func FuzzURL(f *testing.F) {
	for _, seed := range []string{
		"HTTPS://User:pw@WWW.Example.COM:8443/a/B/?q=1#frag", "example.com", "http://[::1]:80/x",
		"spam.example./path//to/page", "a.b.example.co.uk/x/y", "http://10.0.0.1/p", "co.uk", "..example.com",
		"http://[fe80::1%25en0]/", "xn--bcher-kva.example/ä", "http://%41.example/", "",
		"spam.example/x/../win", `http:\\spam.example\win`, "http://3232235777/", "spam.example:99999/x",
		"http:/spam.example", "a.b.0x10/p", "xn--zz.example", "HTTP://User@Spam.Example:8080/a/./b?q#f",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		whole := strings.TrimSpace(raw)
		cut := beforeQuery(whole)
		if host, path, ok := plainURL(cut); ok {
			parsedHost, parsedPath, err := parseURL(cut)
			require.NoError(t, err, "a plain URL is one a browser reads")
			require.Equal(t, [2]string{parsedHost, parsedPath}, [2]string{host, path}, "plainURL reads %q as browserURL does", cut)
		}
		host, path, err := parseURL(whole)
		cutHost, cutPath, cutErr := parseURL(cut)
		require.Equal(t, err == nil, cutErr == nil, "the query decides nothing: %q: %v, %v", whole, err, cutErr)
		require.Equal(t, [2]string{host, path}, [2]string{cutHost, cutPath}, "the query changes neither host nor path: %q", whole)
		canonical, err := Canonical(raw)
		candidates, rollupErr := Rollup(raw)
		if err != nil {
			require.ErrorIs(t, err, ErrBadURL)
			require.ErrorIs(t, rollupErr, ErrBadURL, "Canonical and Rollup refuse the same lines")
			return
		}
		require.NoError(t, rollupErr)
		require.NotEmpty(t, candidates)
		require.Equal(t, canonical, candidates[0], "Rollup looks first where Canonical stores")
		require.LessOrEqual(t, len(candidates), strings.Count(canonical, "/")+strings.Count(canonical, ".")+1)
	})
}

// BenchmarkCanonical is the per-key cost a URL pays on top of the
// filter's (add --url, check --rollup).
func BenchmarkCanonical(b *testing.B) {
	for _, bench := range []struct {
		name string
		urls []string
	}{
		{"plain", []string{ // what nearly every key is
			"https://Example.com/path/to/page?q=1&x=y#frag",
			"spam.example/win-a-prize",
			"http://user@sub.domain.example.co.uk:8080/a/b/c/d/",
			"HTTPS://WWW.EXAMPLE.ORG/~user/index.html",
		}},
		{"disguised", []string{ // what browserURL reads
			"https://Example.com/path/../to/page?q=1&x=y#frag",
			"spam.example/win%2Da%2Dprize",
			`http://user@sub.domain.example.co.uk:8080\a\b\c\d\`,
			"HTTPS://WWW.EXAMPLE.ORG/%7Euser/index.html",
		}},
	} {
		b.Run(bench.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := Canonical(bench.urls[i%len(bench.urls)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
