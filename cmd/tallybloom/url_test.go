package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCanonicalURL(t *testing.T) {
	for raw, want := range map[string]string{
		"HTTPS://User:pw@WWW.Example.COM:8443/a/B/?q=1#frag": "www.example.com/a/B",
		"example.com":                 "example.com",
		"example.com/":                "example.com",
		"http://[::1]:80/x":           "::1/x",
		"spam.example./path//to/page": "spam.example/path/to/page",
	} {
		got, err := canonicalURL(raw)
		require.NoError(t, err, raw)
		assert.Equal(t, want, got, raw)
	}
	_, err := canonicalURL("http:///nohost")
	assert.ErrorIs(t, err, errBadURL)
}

func TestRollupCandidates(t *testing.T) {
	got, err := rollupCandidates("https://a.b.example.co.uk/x/y?z")
	require.NoError(t, err)
	assert.Equal(t, []string{
		"a.b.example.co.uk/x/y", "a.b.example.co.uk/x", "a.b.example.co.uk",
		"b.example.co.uk", "example.co.uk",
	}, got, "parents stop at the registrable domain")

	got, err = rollupCandidates("http://10.0.0.1/p")
	require.NoError(t, err)
	assert.Equal(t, []string{"10.0.0.1/p", "10.0.0.1"}, got)
}

// FuzzURL checks, for any line a user may feed add --url and check
// --rollup, that neither panics nor loops, and that check --rollup of a URL
// looks first for the form add --url stored it under: otherwise a URL added
// would not be found.
func FuzzURL(f *testing.F) {
	for _, seed := range []string{
		"HTTPS://User:pw@WWW.Example.COM:8443/a/B/?q=1#frag", "example.com", "http://[::1]:80/x",
		"spam.example./path//to/page", "a.b.example.co.uk/x/y", "http://10.0.0.1/p", "co.uk", "..example.com",
		"http://[fe80::1%25en0]/", "xn--bcher-kva.example/ä", "http://%41.example/", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		canonical, err := canonicalURL(raw)
		candidates, rollupErr := rollupCandidates(raw)
		if err != nil {
			require.ErrorIs(t, err, errBadURL)
			require.ErrorIs(t, rollupErr, errBadURL, "add and check refuse the same lines")
			return
		}
		require.NoError(t, rollupErr)
		require.NotEmpty(t, candidates)
		require.Equal(t, canonical, candidates[0], "check --rollup looks first where add --url stored it")
		require.LessOrEqual(t, len(candidates), strings.Count(canonical, "/")+strings.Count(canonical, ".")+1)
	})
}

// BenchmarkCanonicalURL is the per-key cost `add --url` and `check` pay on
// top of the filter's.
func BenchmarkCanonicalURL(b *testing.B) {
	urls := []string{
		"https://Example.com/path/to/page?q=1&x=y#frag",
		"spam.example/win-a-prize",
		"http://user@sub.domain.example.co.uk:8080/a/b/c/d/",
		"HTTPS://WWW.EXAMPLE.ORG/%7Euser/index.html",
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := canonicalURL(urls[i%len(urls)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
