package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/seckill/seckill/internal/room"
)

// solve finds the first nonce of web/pow/solve.js's search, for a challenge
// shorter than a SHA-256 block and for one of a real challenge's length
// (whose first block it hashes once).
func TestSolveFindsTheFirstNonce(t *testing.T) {
	for _, c := range []string{"pow", fakeChallenge(), strings.Repeat("x", 63), strings.Repeat("y", 64)} {
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
