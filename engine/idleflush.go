package engine

import "time"

// startFlushingWhenIdle starts flushWhenIdle for a writer opened with
// Options.FlushWhenIdle.
func (f *Filter) startFlushingWhenIdle(every time.Duration) {
	if f.readOnly || every <= 0 {
		return
	}
	f.idleStop = make(chan struct{})
	watch := &idleWatch{every: every, seen: f.journal.MemSeq(), since: time.Now()}
	go f.flushWhenIdle(watch, f.idleStop)
}

// idleWatch is what flushWhenIdle knows between looks: the memory sequence
// it saw, which every change moves, and when it first saw it.
type idleWatch struct {
	every time.Duration
	seen  uint64
	since time.Time
}

// flushWhenIdle looks at the filter every period until stop is closed.
func (f *Filter) flushWhenIdle(watch *idleWatch, stop <-chan struct{}) {
	ticker := time.NewTicker(watch.every)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
			f.flushIfIdle(watch, time.Now)
		}
	}
}

// flushIfIdle flushes the filter if its memory sequence has not moved for
// a period: no change was committed since watch first saw it, a period or
// more before now. Two looks a moment apart (a tick that waited for the
// mutex, then the next at once) are not a quiet period. A flush that fails
// leaves the filter dirty, so a later look tries again. The look takes the
// mutex, which a change holds for a moment, so that it never reads a
// header Close or a failed Open gave back; now is read under it.
func (f *Filter) flushIfIdle(watch *idleWatch, now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return
	}
	at := now()
	if seq := f.journal.MemSeq(); seq != watch.seen {
		watch.seen, watch.since = seq, at
		return
	}
	if at.Sub(watch.since) >= watch.every {
		_ = f.flushLocked() // its error is kept for Stats.FlushError
	}
}
