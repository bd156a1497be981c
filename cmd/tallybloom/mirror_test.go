//go:build unix

package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/internal/redistest"
)

// mirror push, check --redis and mirror pull, as a user runs them.
func TestMirrorCommands(t *testing.T) {
	for _, cluster := range []bool{false, true} {
		t.Run(map[bool]string{false: "standalone", true: "cluster"}[cluster], func(t *testing.T) {
			url := ""
			var flags []string
			if cluster {
				url, flags = redistest.StartCluster(t).URL(), []string{"--cluster"}
			} else {
				url = redistest.StartServer(t).URL()
			}
			remote := append([]string{"--redis", url, "--name", "spam"}, flags...)
			path := newFile(t, "--capacity", "200", "--error-rate", "0.01", "--growth", "1")
			lines := make([]string, 500)
			for i := range lines {
				lines[i] = fmt.Sprintf("%d\thttps://spam-%d.example/", i, i)
			}
			_, errOut, code := tallybloomIn(t, strings.Join(lines, "\n"), "add", "--with-ids", "--url", path)
			require.Equal(t, 0, code, errOut)

			out, errOut, code := tallybloom(t, append([]string{"mirror", "push", path}, remote...)...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, `pushed `+path)

			probes := []string{"spam-1.example", "spam-499.example", "clean.example"}
			local, _, localCode := tallybloom(t, append([]string{"check", path}, probes...)...)
			got, _, gotCode := tallybloom(t, append(append([]string{"check"}, remote...), probes...)...)
			assert.Equal(t, local, got, "the same output as a local check")
			assert.Equal(t, localCode, gotCode)
			assert.Equal(t, 1, gotCode)
			got, _, _ = tallybloomIn(t, "https://www.spam-7.example/x\nhttps://ok.example/\n", append([]string{"check", "--rollup", "--json"}, remote...)...)
			assert.Equal(t, `{"key":"https://www.spam-7.example/x","present":true,"match":"spam-7.example"}`+"\n"+
				`{"key":"https://ok.example/","present":false}`+"\n", got)

			pulled := filepath.Join(t.TempDir(), "pulled.tb")
			out, errOut, code = tallybloom(t, append([]string{"mirror", "pull", pulled}, remote...)...)
			require.Equal(t, 0, code, errOut)
			assert.Contains(t, out, "500 keys in 3 sub-filters")
			assert.Contains(t, out, "of presence bits", "as the filter pushed")
			again, _, _ := tallybloom(t, append([]string{"check", pulled}, probes...)...)
			assert.Equal(t, local, again)
			_, _, code = tallybloom(t, "verify", pulled)
			assert.Equal(t, 0, code)

			lean := filepath.Join(t.TempDir(), "lean.tb")
			out, errOut, code = tallybloom(t, append([]string{"mirror", "pull", lean, "--counters-only"}, remote...)...)
			require.Equal(t, 0, code, errOut)
			assert.NotContains(t, out, "presence bits", "counters only, as asked")
			stats, _, _ := tallybloom(t, "stats", "--json", lean)
			assert.Contains(t, stats, `"counters_only": true`)
			again, _, _ = tallybloom(t, append([]string{"check", lean}, probes...)...)
			assert.Equal(t, local, again)
		})
	}
}

func TestMirrorCommandErrors(t *testing.T) {
	s := redistest.StartServer(t, "--requirepass", "s3cret-pass")
	path := newFile(t, "--capacity", "10", "--error-rate", "0.1")
	good := strings.Replace(s.URL(), "redis://", "redis://:s3cret-pass@", 1)

	_, errOut, code := tallybloom(t, "mirror", "push", path, "--redis", good, "--name", "x")
	require.Equal(t, 0, code, "a password in the URL works: %s", errOut)
	out, _, code := tallybloom(t, "check", "--redis", good, "--name", "x", "a")
	assert.Equal(t, 1, code)
	assert.Equal(t, "absent\ta\n", out)

	bad := strings.Replace(s.URL(), "redis://", "redis://:wrong-pass@", 1)
	out, errOut, code = tallybloom(t, "mirror", "push", path, "--redis", bad, "--name", "x")
	assert.Equal(t, 2, code)
	assert.NotContains(t, out+errOut, "wrong-pass", "credentials never appear")
	out, errOut, code = tallybloom(t, "check", "--redis", good, "--name", "missing", "a")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no copy of the filter")
	assert.NotContains(t, out+errOut, "s3cret-pass")
	out, errOut, code = tallybloom(t, "mirror", "pull", filepath.Join(t.TempDir(), "p.tb"), "--redis", good, "--name", "missing")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "no copy of the filter")
	assert.NotContains(t, out+errOut, "s3cret-pass")
	_, errOut, code = tallybloom(t, "check", "--redis", good, "a")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "Usage:")
}
