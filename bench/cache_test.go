package bench

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Lookups at 64M measure the cache after their timing, alone and side by
// side, as those of filters the cache holds do: their page-table entries
// are in it.
func TestLookupsAt64MMeasureTheCache(t *testing.T) {
	out, err := exec.Command(os.Args[0], "-test.run", "^$", "-test.benchtime", "1x",
		"-test.bench", "^BenchmarkContains(SideBySide)?$/^64M$/^tallybloom$", "-sizes", "ci").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var rows []string
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "BenchmarkContains") {
			rows = append(rows, line)
		}
	}
	if len(rows) != 3 {
		t.Fatalf("want the member, non-member and side-by-side rows, got:\n%s", out)
	}
	for _, row := range rows {
		if !strings.Contains(row, " cache-ns") {
			t.Errorf("no cache measured: %s", row)
		}
	}
}
