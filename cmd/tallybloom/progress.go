package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress shows a bar with rate and time left on a terminal, nothing
// elsewhere, and ends with a one-line summary either way.
type progress struct {
	out   io.Writer
	bar   *progressbar.ProgressBar
	start time.Time
	keys  uint64
}

// newProgress tracks work of total bytes read (-1 when unknown) on stderr.
func newProgress(stderr io.Writer, what string, total int64) *progress {
	return startProgress(stderr, what, total, true)
}

// newKeyProgress tracks total keys, advanced with advance.
func newKeyProgress(stderr io.Writer, what string, total int64) *progress {
	return startProgress(stderr, what, total, false)
}

func startProgress(stderr io.Writer, what string, total int64, inBytes bool) *progress {
	p := &progress{out: stderr, start: time.Now()}
	if file, ok := stderr.(*os.File); ok && term.IsTerminal(int(file.Fd())) {
		options := []progressbar.Option{
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription(what),
			progressbar.OptionShowBytes(inBytes),
			progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100 * time.Millisecond),
			progressbar.OptionClearOnFinish(),
		}
		if !inBytes {
			// Steps of keys get a rate of keys; steps of bytes show a rate
			// of bytes already, and one of "keys" would count bytes.
			options = append(options, progressbar.OptionShowIts(), progressbar.OptionSetItsString("keys"))
		}
		p.bar = progressbar.NewOptions64(total, options...)
	}
	return p
}

// advance counts one key done, for a key progress.
func (p *progress) advance() {
	p.keys++
	if p.bar != nil {
		_ = p.bar.Add(1)
	}
}

// reader counts what r reads into the bar.
func (p *progress) reader(r io.Reader) io.Reader {
	if p.bar == nil {
		return r
	}
	reader := progressbar.NewReader(r, p.bar)
	return &reader
}

// note prints a line of its own, clearing the bar first, which draws
// itself again below it at its next step.
func (p *progress) note(line string) {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	fmt.Fprintln(p.out, line)
}

// counted is n and noun, in the plural unless n is 1.
func counted[N int | int64 | uint64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// summary ends the bar and prints one line: what was done, how long it
// took, and the rate.
func (p *progress) summary(format string, args ...any) {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
	elapsed := time.Since(p.start)
	rate := float64(p.keys) / max(elapsed.Seconds(), 1e-9)
	fmt.Fprintf(p.out, "%s in %s, %.0f keys/s\n", fmt.Sprintf(format, args...), elapsed.Round(time.Millisecond), rate)
}
