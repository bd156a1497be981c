package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// runChild runs role in place of the tests: "output-sync" writes an output
// to $TALLYBLOOM_OUT and commits it, saying "syncing" on standard output
// when its sync starts and holding the sync a minute.
func runChild(role string) int {
	if role != "output-sync" {
		fmt.Fprintln(os.Stderr, "unknown child role", role)
		return 2
	}
	syncBeside = func(f *os.File) error {
		fmt.Println("syncing")
		time.Sleep(time.Minute)
		return f.Sync()
	}
	out := os.Getenv("TALLYBLOOM_OUT")
	o, err := createOutput(out, filepath.Join(filepath.Dir(out), "filter"))
	if err == nil {
		_, err = o.Write([]byte("a new export"))
	}
	if err == nil {
		err = o.commit()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 0
}
