// Package dablooms measures bitly's dablooms, the C library tallybloom
// succeeds, beside the Go peers. Build compiles the dablooms release the
// bench module requires from the source the Go module proxy serves for it
// (see ../tools.go), and the Filter type, built with the dablooms tag and
// cgo, calls that code: every call crosses from Go to C, as a Go service
// calling dablooms does.
package dablooms

import (
	"bytes"
	"crypto/sha256"
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
	return linkFlags(src, dir), nil
}

// linkFlags build against dablooms' header in src and its archive in dir.
func linkFlags(src, dir string) Flags {
	return Flags{CFLAGS: "-I" + src, LDFLAGS: "-L" + dir + " -ldablooms -lm"}
}

// BuildShared is Build into a directory under cache named by the archive's
// hash, kept for the next build. go's build cache keys a cgo build on its
// flags, not on the library they name: with a new directory every time,
// every build of the bench recompiled and relinked it (30 s on two cores);
// with one directory for every archive, a bench linked with another archive
// could be reused. A directory named by the archive's content changes
// exactly when the archive does.
func BuildShared(benchModule, cache string) (Flags, error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return Flags{}, err
	}
	tmp, err := os.MkdirTemp(cache, "build-")
	if err != nil {
		return Flags{}, err
	}
	defer os.RemoveAll(tmp)
	flags, err := Build(benchModule, tmp)
	if err != nil {
		return Flags{}, err
	}
	archive, err := os.ReadFile(filepath.Join(tmp, "libdablooms.a"))
	if err != nil {
		return Flags{}, err
	}
	sum := sha256.Sum256(archive)
	dir := filepath.Join(cache, fmt.Sprintf("dablooms-%x", sum[:8]))
	if _, err := os.Stat(filepath.Join(dir, "libdablooms.a")); err != nil {
		// Not built before, or left half made: the new build takes its
		// place. A build running beside this one may have put it there
		// first, with the same bytes.
		_ = os.RemoveAll(dir)
		if err := os.Rename(tmp, dir); err != nil {
			if _, statErr := os.Stat(filepath.Join(dir, "libdablooms.a")); statErr != nil {
				return Flags{}, err
			}
		}
	}
	return linkFlags(strings.TrimPrefix(flags.CFLAGS, "-I"), dir), nil
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
