// Package urlkey turns URLs into the keys a spam filter stores and checks:
// one key for every way of writing a URL that leads a browser to the same
// page, so that a spammer cannot slip a listed URL past the filter by
// rewriting it.
//
// [Canonical] is the key a URL is added and removed under; [Rollup] is the
// keys a URL is checked under, so that listing a domain, a host or a path
// catches every URL below it. The tallybloom command's add --url, remove
// --url and check --rollup use them, and a service that checks or adds
// URLs itself uses them too, so that its keys and the command's are the
// same.
//
// # The form
//
// A URL is read as a browser reads it (the WHATWG URL Standard):
// backslashes are slashes, tabs and newlines are dropped, "." and ".."
// segments are resolved, the host is lowercased, an international host is
// put in punycode and a number in any base is an IPv4 address. Then, as
// Google Safe Browsing does, percent-escapes are decoded until none is left
// and encoded again one way, and the dots around and doubled in a host go.
// The key is the host, then the path's segments, without scheme, port,
// user, query, fragment or trailing slash. The path keeps its case, since
// servers tell /Win from /win.
//
// Both functions are pure and safe for concurrent use.
package urlkey
