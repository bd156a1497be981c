package mirror

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tallybloom/tallybloom/engine"
)

// FuzzDecodeMeta: a meta or pending hash read from Redis is never trusted.
// Whatever fields it holds, decodeMeta returns an error or a copy whose
// parameters and shapes are valid, never both, never a panic; and naming
// the parts of what it returns stays within the bound it is given.
func FuzzDecodeMeta(f *testing.F) {
	cfg := engine.Config{Capacity: 1000, ErrorRate: 0.01, Tightening: 0.9, Growth: 2, Seed: 1}
	subs := []engine.SubFilterStats{
		{Level: 0, FirstID: 1, Capacity: 1000, K: 7, Blocks: 150, Count: 900, MaxID: 40, NonZero: 5000},
		{Level: 1, FirstID: 41, Capacity: 2000, K: 8, Blocks: 320, Count: 10, MaxID: 50, NonZero: 70},
	}
	valid := joinFields(metaFields(3, 77, 4096, cfg, subs))
	if m, err := decodeMeta(splitFields(valid)); err != nil || len(m.subs) != 2 {
		f.Fatalf("the seed does not decode: %v", err)
	}
	f.Add(valid)
	f.Add(joinFields(metaFields(1, 1, 64, cfg, subs[:1])))
	f.Add("format\x00tallybloom-mirror-2\x00gen\x00x")
	f.Fuzz(func(t *testing.T, joined string) {
		m, err := decodeMeta(splitFields(joined))
		if err != nil {
			if m.subs != nil || m.gen != 0 {
				t.Fatalf("error %v with a copy %+v", err, m)
			}
			return
		}
		if err := m.config.Validate(); err != nil {
			t.Fatalf("accepted a config that is not valid: %v", err)
		}
		if _, err := engine.NewPlacement(m.config, m.subs); err != nil {
			t.Fatalf("accepted shapes that are not valid: %v", err)
		}
		if n, ok := partCount(m, 1<<12); ok {
			if names := (keys{"fuzz"}).copyParts(m); uint64(len(names)) != n {
				t.Fatalf("%d parts counted, %d named", n, len(names))
			}
		}
	})
}

// joinFields is a hash's fields and values as the fuzzer's one string.
func joinFields(fields []any) string {
	s := make([]string, len(fields))
	for i, v := range fields {
		s[i] = fmt.Sprint(v)
	}
	return strings.Join(s, "\x00")
}

// splitFields is joinFields undone, as HGETALL answers.
func splitFields(joined string) []any {
	fields := strings.Split(joined, "\x00")
	answer := make([]any, len(fields))
	for i, field := range fields {
		answer[i] = field
	}
	return answer
}

// decodeMeta says what is wrong with a meta hash it refuses, each field it
// checks on its own.
func TestDecodeMetaSaysWhatIsWrong(t *testing.T) {
	cfg := engine.Config{Capacity: 1000, ErrorRate: 0.01, Tightening: 0.9, Growth: 2, Seed: 1}
	subs := []engine.SubFilterStats{{Level: 0, FirstID: 1, Capacity: 1000, K: 7, Blocks: 150, Count: 900, MaxID: 40, NonZero: 5000}}
	valid := splitFields(joinFields(metaFields(3, 77, 4096, cfg, subs)))
	_, err := decodeMeta(valid)
	require.NoError(t, err)
	with := func(field string, value any) []any {
		answer := slices.Clone(valid)
		for i := 0; i < len(answer); i += 2 {
			if answer[i] == field {
				answer[i+1] = value
				return answer
			}
		}
		return append(answer, field, value)
	}
	config := valid[slices.Index(valid, any("config"))+1].(string)
	badRate := strings.Replace(config, `"error_rate":0.01`, `"error_rate":2`, 1)
	require.Contains(t, badRate, `"error_rate":2`)
	for name, c := range map[string]struct {
		answer any
		want   string
	}{
		"not a list":        {"a string", "meta is string"},
		"an odd list":       {valid[:len(valid)-1], "meta is []interface {}"},
		"a value not text":  {with("seq", int64(77)), "meta field of type int64"},
		"another format":    {with("format", "other-1"), `meta format "other-1"`},
		"a generation":      {with("gen", "x"), `meta gen "x"`},
		"a config not JSON": {with("config", "{"), "meta config or directory"},
		"parts of 100":      {with("part", "100"), "meta config or directory"},
		"tallies":           {with(tallyField(0), "a b c"), `tallies of level 0 "a b c"`},
		"a rate of 2":       {with("config", badRate), "error rate"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodeMeta(c.answer)
			require.ErrorIs(t, err, ErrBadAnswer)
			assert.ErrorContains(t, err, c.want)
		})
	}
	_, err = decodeMeta([]any{})
	assert.ErrorIs(t, err, ErrNotMirrored, "no hash at all")
}
