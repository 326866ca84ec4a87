package app

import (
	"fmt"
	"os"
	"testing"

	"github.com/seckill/seckill/internal/testsvc"
)

// TestMain drops the databases testsvc.ServerMySQL kept for reuse (on TiDB)
// once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := testsvc.DropReused(); err != nil {
		fmt.Fprintln(os.Stderr, "app:", err)
	}
	os.Exit(code)
}
