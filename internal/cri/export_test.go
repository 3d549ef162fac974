package cri

// Kicks counts the kicks that brought a poll forward.
func (w *Watcher) Kicks() uint64 { return w.kicks.Load() }
