//go:build linux

package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/internal/resident"
)

// add --populate (and dedupe's) readies the newest sub-filter's pages
// after the first keys, and each new one's once it opens: one key touches
// a page or two of a sub-filter for 100 000 keys, the first of a filter,
// or the second of a chain that grows a hundredfold.
func TestAddPopulateReadiesEachNewSubFilter(t *testing.T) {
	cases := []struct {
		name, verb string
		create     []string
		keys       int
	}{
		{"first", "add", []string{"--capacity", "100000"}, 1},
		{"opened", "add", []string{"--capacity", "1000", "--growth", "100"}, 1001},
		{"dedupe", "dedupe", []string{"--capacity", "100000"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			share := map[bool]float64{}
			for _, populate := range []bool{false, true} {
				path := newFile(t, append(c.create, "--error-rate", "0.01")...)
				args := []string{c.verb, "--with-ids", path}
				if populate {
					args = append(args, "--populate")
				}
				_, errOut, code := tallybloomIn(t, keysIn("key-", c.keys, 1, true), args...)
				require.Equal(t, 0, code, errOut)
				require.NotContains(t, errOut, "warning")
				var err error
				share[populate], err = resident.Share(path)
				require.NoError(t, err)
				out, _, code := tallybloom(t, "check", path, "key-0", fmt.Sprintf("key-%d", c.keys-1))
				require.Equal(t, 0, code)
				require.Equal(t, fmt.Sprintf("present\tkey-0\npresent\tkey-%d\n", c.keys-1), out)
				_, _, code = tallybloom(t, "verify", path)
				require.Equal(t, 0, code)
			}
			if share[false] > 0.5 {
				t.Skipf("the page cache holds %.0f%% of a file whose pages were mostly never stored into: this file system keeps new files' pages in memory, and the test cannot see what it checks", 100*share[false])
			}
			assert.Greater(t, share[true], 0.95, "with --populate (%.2f without)", share[false])
		})
	}
}
