package mirror

import (
	"fmt"
	"strings"
	"testing"

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
