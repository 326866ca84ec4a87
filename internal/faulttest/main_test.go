package faulttest

import (
	"os"
	"testing"

	"github.com/seckill/seckill/internal/testutil"
)

// seckillBin is the seckill binary the scenarios run, built by TestMain.
var seckillBin string

func TestMain(m *testing.M) {
	os.Exit(testutil.MainWithBinary(m, "faulttest", "./cmd/seckill", false, &seckillBin))
}
