package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/internal/room"
)

// solve finds the first nonce of web/pow/solve.js's search, whatever the
// challenge's length: shorter than a SHA-256 block, a real challenge's,
// and the lengths at which the message's end, padded, takes one block or
// two.
func TestSolveFindsTheFirstNonce(t *testing.T) {
	cs := []string{"pow", fakeChallenge()}
	for _, n := range []int{50, 52, 53, 54, 55, 62, 63, 64, 117, 118, 126, 127} {
		cs = append(cs, strings.Repeat("x", n))
	}
	for _, c := range cs {
		const bits = 10
		proof, hashes := solve(c, bits)
		want := -1
		for n := 0; want < 0; n++ {
			if room.Solved(c+":"+strconv.Itoa(n), bits) {
				want = n
			}
		}
		if proof != c+":"+strconv.Itoa(want) || hashes != int64(want)+1 {
			t.Errorf("solve(%q) = %q, %d hashes; want nonce %d, %d hashes", c, proof, hashes, want, want+1)
		}
	}
}

// BenchmarkSolve: the time per hash of solving challenges of a real one's
// shape at 16 bits.
func BenchmarkSolve(b *testing.B) {
	var hashes int64
	for b.Loop() {
		_, n := solve(fakeChallenge(), 16)
		hashes += n
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(hashes), "ns/hash")
}
