// Command dablooms compiles the dablooms release the bench module requires
// into a directory and prints the environment that builds the bench with
// it, for a shell to evaluate:
//
//	eval "$(go run ./cmd/dablooms /tmp/dablooms)"
//	go test -tags dablooms -run '^$' -bench . .
//
// The report does the same itself.
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/tallybloom/tallybloom/bench/dablooms"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: dablooms DIR")
		os.Exit(2)
	}
	flags, err := dablooms.Build(".", os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, kv := range flags.Env() {
		name, value, _ := strings.Cut(kv, "=")
		fmt.Printf("export %s='%s'\n", name, value)
	}
}
