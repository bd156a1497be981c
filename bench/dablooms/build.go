// Package dablooms measures bitly's dablooms, the C library tallybloom
// succeeds, beside the Go peers. Build compiles the dablooms release the
// bench module requires from the source the Go module proxy serves for it
// (see ../tools.go), and the Filter type, built with the dablooms tag and
// cgo, calls that code: every call crosses from Go to C, as a Go service
// calling dablooms does.
package dablooms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Module is the module path of dablooms' source; the bench module's go.mod
// names the release, v0.9.1, its last.
const Module = "github.com/bitly/dablooms"

// ErrNoCompiler is Build's error when no C compiler is on the PATH.
var ErrNoCompiler = errors.New("dablooms: no C compiler (cc) on the PATH")

// Flags are the cgo flags that build the Filter type against a Build.
type Flags struct {
	CFLAGS  string // where dablooms.h is
	LDFLAGS string // the compiled library, and the maths library it uses
}

// Env is the flags as the environment of a go command.
func (f Flags) Env() []string {
	return []string{"CGO_ENABLED=1", "CGO_CFLAGS=" + f.CFLAGS, "CGO_LDFLAGS=" + f.LDFLAGS}
}

// Build compiles dablooms into dir, with the optimisation its own Makefile
// uses, and returns the flags that link it. benchModule is the directory of
// the bench module, whose go.mod and go.sum name and verify the source.
func Build(benchModule, dir string) (Flags, error) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		return Flags{}, ErrNoCompiler
	}
	if _, err := exec.LookPath("ar"); err != nil {
		return Flags{}, fmt.Errorf("%w: no ar to archive what it compiles", ErrNoCompiler)
	}
	src, err := source(benchModule)
	if err != nil {
		return Flags{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Flags{}, err
	}
	// An archive, not the objects: cgo links a package twice, and objects
	// named on the command line would be defined twice.
	archive := filepath.Join(dir, "libdablooms.a")
	_ = os.Remove(archive)
	cmds := [][]string{{"ar", "rcs", archive}}
	for _, name := range []string{"dablooms", "murmur"} {
		object := filepath.Join(dir, name+".o")
		cmds = append(cmds, []string{cc, "-O2", "-fPIC", "-c", "-o", object, filepath.Join(src, name+".c")})
		cmds[0] = append(cmds[0], object)
	}
	for _, args := range append(cmds[1:], cmds[0]) {
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			return Flags{}, fmt.Errorf("dablooms: %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	return Flags{CFLAGS: "-I" + src, LDFLAGS: "-L" + dir + " -ldablooms -lm"}, nil
}

// source is the directory of dablooms' C source in the module cache,
// downloaded if it is not there yet.
func source(benchModule string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", Module)
	cmd.Dir = benchModule
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var download struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(stdout.Bytes(), &download); jsonErr != nil || download.Error != "" || err != nil {
		return "", fmt.Errorf("dablooms: downloading %s: %v %s%s", Module, err, download.Error, stderr.String())
	}
	return filepath.Join(download.Dir, "src"), nil
}
