package urlkey_test

import (
	"fmt"

	"github.com/tallybloom/tallybloom/urlkey"
)

// A URL written the ways a browser still follows to the same page has one
// key.
func ExampleCanonical() {
	for _, raw := range []string{
		"https://Spam.Example/win?ref=mail",
		"spam.example/x/../%77in",
		`http://SPAM.example\win`,
	} {
		key, err := urlkey.Canonical(raw)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(key)
	}
	// Output:
	// spam.example/win
	// spam.example/win
	// spam.example/win
}

// A URL is checked under its key, each shorter path, its host and each
// parent domain down to the registrable one (example.co.uk, never co.uk):
// a filter that holds any of them lists the URL.
func ExampleRollup() {
	keys, err := urlkey.Rollup("https://a.b.spam.example.co.uk/x/y?q")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, key := range keys {
		fmt.Println(key)
	}
	// Output:
	// a.b.spam.example.co.uk/x/y
	// a.b.spam.example.co.uk/x
	// a.b.spam.example.co.uk
	// b.spam.example.co.uk
	// spam.example.co.uk
	// example.co.uk
}
