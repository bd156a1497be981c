//go:build tools

package bench

// The bench module requires dablooms' release for its C source, which
// dablooms.Build compiles; this import, in a build no one makes, keeps the
// requirement and its checksums in go.mod and go.sum.
import _ "github.com/bitly/dablooms/godablooms"
