package urlkey

import "errors"

// ErrBadURL: a line that is not a URL with a host (an empty line, a
// mailto: address, a port past 65535), or one longer than MaxLength before
// its query. The error says which line and why.
var ErrBadURL = errors.New("urlkey: not a URL with a host")
