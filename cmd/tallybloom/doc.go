// Command tallybloom works with tallybloom filter files from the shell.
//
//	tallybloom verify FILE
//
// Exit codes: 0 when all is well, 1 when the answer is "no" (a file that
// fails verification), 2 on an error (a missing file, bad flags), with one
// clear line on standard error.
package main
