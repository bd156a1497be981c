package engine

import "time"

// startFlushingWhenIdle starts flushWhenIdle for a writer opened with
// Options.FlushWhenIdle.
func (f *Filter) startFlushingWhenIdle(every time.Duration) {
	if f.readOnly || every <= 0 {
		return
	}
	f.idleStop = make(chan struct{})
	go f.flushWhenIdle(every, f.journal.MemSeq(), f.idleStop)
}

// flushWhenIdle looks at the filter every period until stop is closed, and
// flushes it when no change was committed since the look before: the
// memory sequence, which every change moves anyway, did not move from
// seen, what the look before saw.
func (f *Filter) flushWhenIdle(every time.Duration, seen uint64, stop <-chan struct{}) {
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
			seen = f.flushIfIdle(seen)
		}
	}
}

// flushIfIdle flushes the filter if its memory sequence is still seen, the
// one the look before saw, and returns the sequence this look saw. A flush
// that fails leaves the filter dirty, so the next look tries again. The
// look takes the mutex, which a change holds for a moment, so that it never
// reads a header Close or a failed Open gave back.
func (f *Filter) flushIfIdle(seen uint64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return seen
	}
	seq := f.journal.MemSeq()
	if seq == seen {
		_ = f.flushLocked() // its error is kept for Stats.FlushError
	}
	return seq
}
