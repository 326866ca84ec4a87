package chaostest

import (
	"os"
	"testing"

	"github.com/seckill/seckill/internal/testutil"
)

// seckillBin is the seckill binary the run starts, built by TestMain.
var seckillBin string

// TestMain builds ./cmd/seckill once, with the race detector when
// serverRace says so, so that a data race in a server under faults fails
// the run too.
func TestMain(m *testing.M) {
	os.Exit(testutil.MainWithBinary(m, "chaostest", "./cmd/seckill", serverRace(), &seckillBin))
}

// serverRace reports whether the seckill processes run with the race
// detector: SECKILL_CHAOS_RACE=1 or 0 decides, otherwise they do when the
// test binary does.
func serverRace() bool {
	switch os.Getenv("SECKILL_CHAOS_RACE") {
	case "1", "true":
		return true
	case "0", "false":
		return false
	}
	return raceEnabled
}
