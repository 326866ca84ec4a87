package main

// The proof of work: solving a room's challenges as a shop front's solver
// does, and a pow sale's solving before its opening.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/internal/room"
)

// solve finds the proof of challenge at bits (1 to 32) as web/pow/solve.js
// does: the decimal nonces 0, 1, 2… until SHA-256("<challenge>:<nonce>")
// starts with bits zero bits. It returns "<challenge>:<nonce>" and the
// hashes it took (nonce + 1), the proof checked with room.Solved, the
// server's own test.
//
// A nonce costs one SHA-256 block, of a challenge of about 100 bytes: the
// whole 64-byte blocks of "<challenge>:" are hashed once, and for each
// nonce the state after them is restored and given the message's last
// block, padding included, which leaves the digest in the state; the
// first word of a state marshalled as "sha\x03" and 8 big-endian words is
// the digest's.
func solve(challenge string, bits int) (string, int64) {
	prefix := challenge + ":"
	whole := len(prefix) / sha256.BlockSize * sha256.BlockSize
	h := sha256.New()
	_, _ = h.Write([]byte(prefix[:whole]))
	mid, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil || !strings.HasPrefix(string(mid), "sha\x03") {
		panic(fmt.Sprintf("fairbench: a SHA-256 state marshalled as %.8q: %v", mid, err))
	}
	restore, state := h.(encoding.BinaryUnmarshaler), h.(encoding.BinaryAppender)
	rest := prefix[whole:]
	out := make([]byte, 0, len(mid))
	for digits, first := 1, int64(0); ; digits, first = digits+1, int64(math.Pow10(digits)) {
		// The message's end with d digits of nonce, padded: rest, the
		// nonce, 0x80, zeros, the message's length in bits.
		n := len(rest) + digits
		last := make([]byte, (n+9+63)/64*64)
		copy(last, rest)
		nonce := strconv.AppendInt(last[len(rest):len(rest)], first, 10)
		last[n] = 0x80
		binary.BigEndian.PutUint64(last[len(last)-8:], uint64(len(prefix)+digits)*8)
		for v, end := first, int64(math.Pow10(digits)); v < end; v++ {
			if v > first {
				increment(nonce)
			}
			_ = restore.UnmarshalBinary(mid)
			_, _ = h.Write(last)
			out, _ = state.AppendBinary(out[:0])
			if binary.BigEndian.Uint32(out[4:8])>>(32-bits) == 0 {
				proof := prefix + string(nonce)
				if !room.Solved(proof, bits) {
					panic("fairbench: solve found " + proof + ", which room.Solved refuses")
				}
				return proof, v + 1
			}
		}
	}
}

// increment adds one to the decimal number d, which is not all nines.
func increment(d []byte) {
	for i := len(d) - 1; ; i-- {
		if d[i] < '9' {
			d[i]++
			return
		}
		d[i] = '0'
	}
}

// measureHashRate is the hashes per second a solver per CPU does here,
// solving made-up challenges of a real one's shape for d.
func measureHashRate(bits int, d time.Duration) float64 {
	var total atomic.Int64
	began := time.Now()
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			for time.Since(began) < d {
				_, n := solve(fakeChallenge(), bits)
				total.Add(n)
			}
		})
	}
	wg.Wait()
	return float64(total.Load()) / time.Since(began).Seconds()
}

// fakeChallenge has the shape and length of a challenge:
// c1.<sku>.<expiry>.<id>.<key id>.<MAC>.
func fakeChallenge() string {
	var id [16]byte
	var mac [32]byte
	_, _ = rand.Read(id[:])
	_, _ = rand.Read(mac[:])
	enc := base64.RawURLEncoding
	return "c1.12.1794355272000." + enc.EncodeToString(id[:]) + ".0123abcd." + enc.EncodeToString(mac[:])
}

// powStats is what a pow sale's proofs of work took.
type powStats struct {
	// took is fetching and solving every shopper's challenge here, before
	// the opening; hashes were hashed at rate per second.
	took   time.Duration
	hashes int64
	rate   float64
	// done: every proof was found before the deadline.
	done bool
	// tries counts the SKUs created until the solving ended before the
	// room's opening.
	tries int
	// humanMed and humanMax are a human device's solving, from its
	// arrival; botLast is when the last bot identity's proof was found,
	// after the opening.
	humanMed, humanMax, botLast time.Duration
	// expired counts the joins refused as their challenge had expired.
	expired int64
}

// solveTime is how long hashes take at rate hashes per second.
func solveTime(hashes int64, rate float64) time.Duration {
	return time.Duration(float64(hashes) / rate * float64(time.Second))
}

// powSolving is how long solving every shopper's expected 2^bits hashes
// takes here, at the last measured rate.
func (b *bench) powSolving() time.Duration {
	est := float64(b.cfg.shoppers) * math.Exp2(float64(b.cfg.powBits)) / b.hashRate
	return time.Duration(est * float64(time.Second))
}

// powLead is how long before a pow sale's opening to create its SKU: the
// solving with a margin, after the room's opening (lead from now), at most
// maxPowLead.
func (b *bench) powLead() time.Duration {
	return min(max(b.cfg.lead, b.cfg.lead+b.powSolving()*6/5+3*time.Second), b.maxPowLead())
}

// maxPowLead is the longest lead that leaves every challenge valid until
// 12 s after the window (the slowest of 9,000 human devices takes about
// 10 s at 2^16 hashes): a challenge is valid room.PowTTL up to 20 bits,
// twice as long for each bit more. A machine that solves every proof more
// slowly cannot run the pow mode.
func (b *bench) maxPowLead() time.Duration {
	return room.PowTTL<<max(b.cfg.powBits-20, 0) - b.cfg.powWindow - 12*time.Second
}

// prepare gets every shopper's challenge, from the room's opening, and
// solves it before the shoppers are let in, with a solver per CPU: no machine here solves at the pace of
// 10,000 devices at once. It then sets when each shopper's own device
// would have found its proof: a human's at humanHashes from its arrival,
// a bot operator's at botHashes from the opening, its identities one after
// the other. It gives up at deadline (done false: the rate measured).
func (s *sale) prepare(deadline time.Time) (powStats, error) {
	cfg := s.b.cfg
	time.Sleep(time.Until(s.roomOpens)) // no challenge is given before
	began := time.Now()
	var (
		mu       sync.Mutex
		firstErr error
		total    atomic.Int64
		late     atomic.Bool
	)
	hashes := make([]int64, len(s.shoppers))
	fetch := make(chan int)
	solveq := make(chan int, 512)
	var fetchers, solvers sync.WaitGroup
	for range 16 {
		fetchers.Go(func() {
			for i := range fetch {
				if late.Load() {
					continue
				}
				c, err := s.challenge(&s.shoppers[i])
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					continue
				}
				s.shoppers[i].proof = c
				solveq <- i
			}
		})
	}
	for range runtime.NumCPU() {
		solvers.Go(func() {
			for i := range solveq {
				if time.Now().After(deadline) {
					late.Store(true)
					continue
				}
				sh := &s.shoppers[i]
				sh.proof, hashes[i] = solve(sh.proof, cfg.powBits)
				total.Add(hashes[i])
			}
		})
	}
	for i := range s.shoppers {
		if late.Load() {
			break
		}
		fetch <- i
	}
	close(fetch)
	fetchers.Wait()
	close(solveq)
	solvers.Wait()
	if firstErr != nil {
		return powStats{}, firstErr
	}
	st := powStats{took: time.Since(began), hashes: total.Load(), done: !late.Load()}
	st.rate = float64(st.hashes) / st.took.Seconds()
	if !st.done {
		return st, nil
	}

	var humans []time.Duration
	ops := map[int]int64{}
	for i := range s.shoppers {
		sh := &s.shoppers[i]
		if sh.bot {
			ops[sh.op] += hashes[i]
			sh.solving = solveTime(ops[sh.op], cfg.botHashes)
			st.botLast = max(st.botLast, sh.solving)
		} else {
			sh.solving = solveTime(hashes[i], cfg.humanHashes)
			humans = append(humans, sh.solving)
		}
	}
	if len(humans) > 0 {
		slices.Sort(humans)
		st.humanMed, st.humanMax = humans[len(humans)/2], humans[len(humans)-1]
	}
	return st, nil
}

// challenge fetches a proof-of-work challenge for sh's first join.
func (s *sale) challenge(sh *shopper) (string, error) {
	path := s.path() + "/queue/challenge"
	for range 20 {
		r := s.call(sh, http.MethodGet, path, nil, "", "challenge")
		switch {
		case r.status == http.StatusOK && r.challenge != "" && r.bits == s.b.cfg.powBits:
			return r.challenge, nil
		case r.status == http.StatusOK:
			return "", fmt.Errorf("GET %s: challenge %q of %d bits, want %d bits", path, r.challenge, r.bits, s.b.cfg.powBits)
		case !retryable(r):
			return "", fmt.Errorf("GET %s: %d %s", path, r.status, r.code)
		}
		time.Sleep(s.errWait(sh, r))
	}
	return "", fmt.Errorf("GET %s: no challenge after 20 tries", path)
}

// solveAgain gets sh a new challenge for a join whose proof expired, and
// solves it: the proof, and how much longer than this machine the
// shopper's device takes (a bot's at its operator's whole rate).
func (s *sale) solveAgain(sh *shopper) (string, time.Duration, error) {
	began := time.Now()
	c, err := s.challenge(sh)
	if err != nil {
		return "", 0, err
	}
	proof, n := solve(c, s.b.cfg.powBits)
	rate := s.b.cfg.humanHashes
	if sh.bot {
		rate = s.b.cfg.botHashes
	}
	return proof, solveTime(n, rate) - time.Since(began), nil
}
