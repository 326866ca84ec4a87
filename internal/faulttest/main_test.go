package faulttest

import (
	"fmt"
	"os"
	"testing"

	"github.com/seckill/seckill/internal/testsvc"
	"github.com/seckill/seckill/internal/testutil"
)

// seckillBin is the seckill binary the scenarios run, built by TestMain.
var seckillBin string

// TestMain builds the binary, runs the scenarios and drops the databases
// testsvc.ServerMySQL kept for reuse (on TiDB).
func TestMain(m *testing.M) {
	code := testutil.MainWithBinary(m, "faulttest", "./cmd/seckill", false, &seckillBin)
	if err := testsvc.DropReused(); err != nil {
		fmt.Fprintln(os.Stderr, "faulttest:", err)
	}
	os.Exit(code)
}
