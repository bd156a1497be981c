package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitNo    = 1 // the answer is no: a file that fails verification
	exitError = 2 // the command could not do its job
)

// exitCode is an error that chooses its exit code.
type exitCode struct {
	code int
	err  error
}

func (e *exitCode) Error() string { return e.err.Error() }
func (e *exitCode) Unwrap() error { return e.err }

// run executes one command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := &cobra.Command{
		Use:           "tallybloom",
		Short:         "Work with tallybloom counting Bloom filter files",
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// Bad flags and arguments print the usage with the error.
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageError(cmd, err)
	})
	root.AddCommand(verifyCommand())

	err := root.Execute()
	if err == nil {
		return exitOK
	}
	code := exitError
	var ec *exitCode
	if errors.As(err, &ec) {
		code = ec.code
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
