//go:build unix

package main

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/tallybloom/tallybloom/engine"
)

// feedInBursts writes "ID<TAB>key-ID" lines, ids from 0 on, to in, the
// input of a command that adds them to the filter at path, perBurst lines
// a burst: the number bursts says, or with 0 until a write fails. After
// each burst it waits until a reader of the filter counts the burst's
// keys, then pauses as long as that took and at least 5 ms, so that
// another process finds the writer idle about half of the time and can
// copy the filter between two of its changes. Paced by the clock alone,
// the writer of a busy machine falls behind its input, and a pipe full of
// keys is a writer that never pauses. The channel gets the write's error
// (nil after the last burst).
func feedInBursts(in io.Writer, path string, perBurst, bursts int) <-chan error {
	fed := make(chan error, 1)
	go func() {
		progress, err := engine.Open(path, &engine.Options{ReadOnly: true})
		if err != nil {
			fed <- err
			return
		}
		defer progress.Close()
		var lines bytes.Buffer
		sent := 0
		for burst := 0; bursts == 0 || burst < bursts; burst++ {
			lines.Reset()
			for range perBurst {
				fmt.Fprintf(&lines, "%d\tkey-%d\n", sent, sent)
				sent++
			}
			start := time.Now()
			if _, err := in.Write(lines.Bytes()); err != nil {
				fed <- err
				return
			}
			// A writer that died counts nothing more: the next write fails.
			for deadline := start.Add(10 * time.Second); progress.Stats().Count < uint64(sent) && time.Now().Before(deadline); {
				time.Sleep(100 * time.Microsecond)
			}
			time.Sleep(max(5*time.Millisecond, time.Since(start)))
		}
		fed <- nil
	}()
	return fed
}
