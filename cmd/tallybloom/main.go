package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/tallybloom/tallybloom/engine"
	"github.com/tallybloom/tallybloom/mirror"
)

func main() {
	// The Redis client logs failed dials on its own; the command says
	// what failed once, in its own words.
	redis.SetLogger(quiet{})
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// quiet is a logger that drops what it is given.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Exit codes.
const (
	exitOK    = 0
	exitNo    = 1 // the answer is no: a key absent, a key not found, a file damaged
	exitError = 2 // the command could not do its job
)

// exitCode is an error that chooses its exit code; with a nil err it exits
// silently (the output already said why).
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitCode) Unwrap() error { return e.err }

// run executes one command line and returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "tallybloom",
		Short:         "Work with tallybloom counting Bloom filter files",
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       version(),
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Bad flags and arguments print the usage with the error.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError(cmd, err)
	})
	root.AddCommand(createCommand(), changeCommand("add"), changeCommand("remove"), changeCommand("dedupe"), checkCommand(),
		statsCommand(), verifyCommand(), dropBeforeCommand(), exportCommand(), importCommand(), demoCommand(), mirrorCommand())
	// An error before a command's body runs (a required flag, flags that
	// exclude each other, an unknown command) is a usage error.
	started := false
	var mark func(*cobra.Command)
	mark = func(cmd *cobra.Command) {
		if body := cmd.RunE; body != nil {
			cmd.RunE = func(cmd *cobra.Command, args []string) error {
				started = true
				return body(cmd, args)
			}
		}
		for _, sub := range cmd.Commands() {
			mark(sub)
		}
	}
	mark(root)

	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	var usage *exitCode
	if !started && !errors.As(err, &usage) {
		cmd.PrintErr(cmd.UsageString())
	}
	return exitStatus(stderr, err)
}

// exitStatus prints err, if it has anything to say, and returns the exit
// code it chooses.
func exitStatus(stderr io.Writer, err error) int {
	code := exitError
	var ec *exitCode
	if errors.As(err, &ec) {
		code = ec.code
		if ec.err == nil {
			return code
		}
	}
	fmt.Fprintln(stderr, "tallybloom:", err)
	return code
}

// usageError shows cmd's usage and returns err as an error exit.
func usageError(cmd *cobra.Command, err error) error {
	cmd.PrintErr(cmd.UsageString())
	return &exitCode{code: exitError, err: err}
}

// exactArgs is cobra.ExactArgs with the usage shown on a mismatch.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return usageError(cmd, err)
		}
		return nil
	}
}

// version is the build's module version (a pseudo-version naming the
// commit when built from a checkout) and the formats it reads and writes:
// what a report of a problem needs.
func version() string {
	v := "(unknown)"
	if info, ok := debug.ReadBuildInfo(); ok {
		v = info.Main.Version
	}
	return fmt.Sprintf("%s, file format %d, export format %d, frozen format %d, Redis copies %s, %s",
		v, engine.FormatVersion, engine.ExportVersion, engine.FrozenVersion, mirror.Format, runtime.Version())
}
