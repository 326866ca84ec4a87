package testutil

import (
	"bytes"
	"log/slog"
	"sync"
)

// SyncBuffer is a goroutine-safe log sink: writers may run concurrently
// with each other and with String.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BufferLogger returns a text logger that writes into a fresh SyncBuffer,
// and that buffer, for tests that check what was logged.
func BufferLogger() (*slog.Logger, *SyncBuffer) {
	b := &SyncBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}
