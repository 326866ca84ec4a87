package room

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/seckill/seckill/internal/catalog"
)

// solve finds a nonce for challenge at bits, as a shop front's solver
// does: the decimal counter from 0.
func solve(challenge string, bits int) string {
	for n := 0; ; n++ {
		p := challenge + ":" + strconv.Itoa(n)
		if Solved(p, bits) {
			return p
		}
	}
}

// unsolved is a proof of challenge whose hash does not start with bits
// zero bits.
func unsolved(challenge string, bits int) string {
	for n := 0; ; n++ {
		p := challenge + ":" + strconv.Itoa(n)
		if !Solved(p, bits) {
			return p
		}
	}
}

const powBits = 8

// A challenge is the shopper's, for one SKU, until it expires, and a proof
// holds with enough leading zero bits; each way one fails has its error.
func TestProofIsBoundSignedAndSolved(t *testing.T) {
	s, err := NewSigner([]string{strings.Repeat("k", 32)})
	require.NoError(t, err)
	other, err := NewSigner([]string{strings.Repeat("o", 32)})
	require.NoError(t, err)
	exp := t0.Add(PowTTL)
	c := s.SignChallenge(7, "alice", exp)
	assert.Less(t, len(c), MaxChallengeLen)
	good := solve(c, powBits)

	p, err := s.CheckProof(good, 7, powBits, "alice", t0)
	require.NoError(t, err)
	assert.Equal(t, exp.UnixMilli(), p.Expires.UnixMilli())
	assert.Len(t, p.ID, 22)
	assert.NotEqual(t, p.ID, mustProof(t, s, solve(s.SignChallenge(7, "alice", exp), powBits)).ID, "each challenge is new")

	mac := c[strings.LastIndexByte(c, '.')+1:]
	flipped := c[:len(c)-len(mac)] + string(mac[0]^1) + mac[1:]
	for name, tc := range map[string]struct {
		proof, user string
		sku         uint64
		now         time.Time
		want        error
	}{
		"another shopper's":  {proof: good, user: "bob", sku: 7, now: t0, want: ErrPowForged},
		"another SKU's":      {proof: solve(s.SignChallenge(8, "alice", exp), powBits), user: "alice", sku: 7, now: t0, want: ErrPowWrongSKU},
		"expired":            {proof: good, user: "alice", sku: 7, now: exp, want: ErrPowExpired},
		"another key's":      {proof: solve(other.SignChallenge(7, "alice", exp), powBits), user: "alice", sku: 7, now: t0, want: ErrPowForged},
		"tampered MAC":       {proof: solve(flipped, powBits), user: "alice", sku: 7, now: t0, want: ErrPowForged},
		"tampered expiry":    {proof: solve(strings.Replace(c, strconv.FormatInt(exp.UnixMilli(), 10), strconv.FormatInt(exp.Add(time.Hour).UnixMilli(), 10), 1), powBits), user: "alice", sku: 7, now: t0, want: ErrPowForged},
		"a pass":             {proof: s.Sign(7, "tabc", "alice", exp) + ":1", user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
		"too few zero bits":  {proof: unsolved(c, powBits), user: "alice", sku: 7, now: t0, want: ErrPowUnsolved},
		"no nonce":           {proof: c, user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
		"empty nonce":        {proof: c + ":", user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
		"nonce too long":     {proof: c + ":" + strings.Repeat("1", MaxNonceLen+1), user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
		"bad nonce":          {proof: c + ":1.2", user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
		"a second colon":     {proof: good + ":1", user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
		"challenge too long": {proof: strings.Repeat("c", MaxChallengeLen+1) + ":1", user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
		"too long":           {proof: strings.Repeat("c", MaxProofLen+1), user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
		"empty":              {proof: "", user: "alice", sku: 7, now: t0, want: ErrPowMalformed},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := s.CheckProof(tc.proof, tc.sku, powBits, tc.user, tc.now)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func mustProof(t *testing.T, s *Signer, proof string) Proof {
	t.Helper()
	p, err := s.CheckProof(proof, 7, powBits, "alice", t0)
	require.NoError(t, err)
	return p
}

// Solved counts leading zero bits of the SHA-256, up to 32.
func TestSolvedCountsLeadingZeroBits(t *testing.T) {
	// SHA-256("pow:937") = 00aeba8d…: 8 zero bits, not 9.
	assert.True(t, Solved("pow:937", 8))
	assert.False(t, Solved("pow:937", 9))
	assert.True(t, Solved("anything", 0))
	assert.False(t, Solved("pow:937", 32))
}

// joiner joins through the Room or through a Board.
type joiner struct {
	name string
	join func(f *fixture, user, proof string) (Status, error)
}

func joiners(t *testing.T) []joiner {
	return []joiner{
		{"room", func(f *fixture, user, proof string) (Status, error) {
			return f.room.JoinWithProof(f.t.Context(), f.sku.ID, user, proof)
		}},
		{"board", func(f *fixture, user, proof string) (Status, error) {
			b := NewBoard(f.room, BoardOptions{manual: true})
			t.Cleanup(b.Close)
			return b.JoinWithProof(f.t.Context(), f.sku.ID, user, proof)
		}},
	}
}

// challenge is a new challenge of the fixture's room for user.
func (f *fixture) challenge(user string) Challenge {
	f.t.Helper()
	c, err := f.room.Challenge(f.t.Context(), f.sku.ID, user)
	require.NoError(f.t, err)
	return c
}

// written is how many shoppers hold a ticket and challenges were used.
func (f *fixture) written() (int64, int64) {
	f.t.Helper()
	k := f.room.keys(f.sku.ID)
	who, err := f.room.rdb.HLen(f.t.Context(), k.who).Result()
	require.NoError(f.t, err)
	used, err := f.room.rdb.ZCard(f.t.Context(), k.pow).Result()
	require.NoError(f.t, err)
	return who, used
}

// A first join of a room with pow_bits needs a valid proof: each bad one is
// refused with its error and writes nothing; a valid one issues one ticket,
// after which the shopper joins and looks without one.
func TestJoinNeedsAProofOfWork(t *testing.T) {
	for _, j := range joiners(t) {
		t.Run(j.name, func(t *testing.T) {
			f := newFixture(t, 10, 1, catalog.Room{PowBits: powBits})
			c := f.challenge("alice")
			assert.Equal(t, powBits, c.Bits)
			assert.Equal(t, t0.Add(PowTTL), c.ExpiresAt)
			other := f.challenge("bob")
			foreign := f.room.signer.SignChallenge(f.sku.ID+1, "alice", c.ExpiresAt)
			expired := f.room.signer.SignChallenge(f.sku.ID, "alice", t0.Add(-time.Millisecond))
			for name, tc := range map[string]struct {
				proof string
				want  error
			}{
				"none":              {"", ErrPowRequired},
				"another shopper's": {solve(other.Challenge, powBits), ErrPowForged},
				"another SKU's":     {solve(foreign, powBits), ErrPowWrongSKU},
				"expired":           {solve(expired, powBits), ErrPowExpired},
				"forged":            {solve("c1.7.99999999999999.AAAAAAAAAAAAAAAAAAAAAA.00000000."+strings.Repeat("A", 43), powBits), ErrPowForged},
				"too few zero bits": {unsolved(c.Challenge, powBits), ErrPowUnsolved},
				"malformed":         {c.Challenge, ErrPowMalformed},
			} {
				_, err := j.join(f, "alice", tc.proof)
				assert.ErrorIs(t, err, tc.want, name)
				who, used := f.written()
				assert.Zero(t, who, "%s: no ticket", name)
				assert.Zero(t, used, "%s: nothing recorded", name)
			}
			_, err := f.room.Peek(t.Context(), f.sku.ID, "alice")
			assert.ErrorIs(t, err, ErrNoTicket, "a look needs no proof, and finds no ticket")

			proof := solve(c.Challenge, powBits)
			st, err := j.join(f, "alice", proof)
			require.NoError(t, err)
			require.NotEmpty(t, st.Ticket)
			who, used := f.written()
			assert.Equal(t, int64(1), who)
			assert.Equal(t, int64(1), used)
			for name, p := range map[string]string{"no proof": "", "the same proof": proof,
				"a new proof": solve(f.challenge("alice").Challenge, powBits)} {
				again, err := j.join(f, "alice", p)
				require.NoError(t, err, name)
				assert.Equal(t, st.Ticket, again.Ticket, "%s: the ticket held", name)
			}
			_, err = j.join(f, "alice", unsolved(c.Challenge, powBits))
			assert.ErrorIs(t, err, ErrPowUnsolved, "a bad proof is refused even from a holder")
			looked, err := f.room.Peek(t.Context(), f.sku.ID, "alice")
			require.NoError(t, err)
			assert.Equal(t, st.Ticket, looked.Ticket)
			who, used = f.written()
			assert.Equal(t, int64(1), who, "one ticket")
			assert.Equal(t, int64(1), used, "a holder's proof is not recorded")
		})
	}
}

// A proof issues at most one ticket: replayed after its shopper's ticket
// was lost from the room (HDEL of who, as a state loss would), it is
// refused, and writes nothing.
func TestProofOfWorkIsUsedOnce(t *testing.T) {
	for _, j := range joiners(t) {
		t.Run(j.name, func(t *testing.T) {
			f := newFixture(t, 10, 1, catalog.Room{PowBits: powBits})
			proof := solve(f.challenge("alice").Challenge, powBits)
			_, err := j.join(f, "alice", proof)
			require.NoError(t, err)
			k := f.room.keys(f.sku.ID)
			require.NoError(t, f.room.rdb.HDel(t.Context(), k.who, "alice").Err())
			ttl, err := f.room.rdb.PTTL(t.Context(), k.pow).Result()
			require.NoError(t, err)
			assert.Positive(t, ttl, "the used challenges expire")

			_, err = j.join(f, "alice", proof)
			assert.ErrorIs(t, err, ErrPowUsed)
			who, used := f.written()
			assert.Zero(t, who, "no ticket")
			assert.Equal(t, int64(1), used)

			// A new proof joins again; the old one is dropped a minute
			// after its expiry, by the next join with a proof.
			f.clock.Advance(PowTTL + time.Minute + time.Millisecond)
			_, err = j.join(f, "alice", solve(f.challenge("alice").Challenge, powBits))
			require.NoError(t, err)
			_, used = f.written()
			assert.Equal(t, int64(1), used, "the expired challenge dropped, the new one kept")
		})
	}
}

// The board combines concurrent joins into one script call: a join
// without a valid proof never gets a ticket through a batch with valid
// ones, and each valid proof issues its own shopper's.
func TestBoardBatchesIssueTicketsOnlyWithAProof(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{PowBits: powBits})
	b := NewBoard(f.room, BoardOptions{manual: true})
	t.Cleanup(b.Close)
	const shoppers = 200
	proofs := make([]string, shoppers)
	for i := range shoppers {
		if i%2 == 0 {
			proofs[i] = solve(f.challenge(fmt.Sprintf("u%03d", i)).Challenge, powBits)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := map[string]error{}
	for i := range shoppers {
		wg.Go(func() {
			u := fmt.Sprintf("u%03d", i)
			st, err := b.JoinWithProof(context.Background(), f.sku.ID, u, proofs[i])
			if err == nil && st.Ticket == "" {
				err = fmt.Errorf("no ticket")
			}
			mu.Lock()
			got[u] = err
			mu.Unlock()
		})
	}
	wg.Wait()
	for i := range shoppers {
		u := fmt.Sprintf("u%03d", i)
		if i%2 == 0 {
			assert.NoError(t, got[u], u)
		} else {
			assert.ErrorIs(t, got[u], ErrPowRequired, u)
		}
	}
	who, used := f.written()
	assert.Equal(t, int64(shoppers/2), who)
	assert.Equal(t, int64(shoppers/2), used)
}

// A room without pow_bits gives no challenge, and ignores a proof.
func TestRoomWithoutPowGivesNoChallenge(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{})
	_, err := f.room.Challenge(t.Context(), f.sku.ID, "alice")
	assert.ErrorIs(t, err, ErrPowOff)
	_, err = f.room.Challenge(t.Context(), f.sku.ID+1, "alice")
	assert.ErrorIs(t, err, catalog.ErrNotFound)
	st, err := f.room.JoinWithProof(t.Context(), f.sku.ID, "alice", "anything")
	require.NoError(t, err)
	assert.NotEmpty(t, st.Ticket)
	_, used := f.written()
	assert.Zero(t, used)
}

// A challenge is given only while the room is open: none before opens_at,
// which a solver could use to have its proofs ready at the opening, and
// none after the sale.
func TestChallengesOnlyWhileTheRoomIsOpen(t *testing.T) {
	f := newFixture(t, 10, 1, catalog.Room{PowBits: 8})
	f.sku.Room.OpensAt = new(t0.Add(time.Second))
	_, err := f.room.Challenge(t.Context(), f.sku.ID, "alice")
	require.ErrorIs(t, err, ErrNotOpen)
	f.clock.Advance(time.Second)
	_, err = f.room.Challenge(t.Context(), f.sku.ID, "alice")
	require.NoError(t, err)
	f.clock.Advance(f.sku.EndsAt.Sub(f.clock.Now()))
	_, err = f.room.Challenge(t.Context(), f.sku.ID, "alice")
	require.ErrorIs(t, err, ErrSaleOver)
}

// A challenge of many bits lives longer: each bit over 20 doubles it.
func TestChallengeLifetimeGrowsWithBits(t *testing.T) {
	assert.Equal(t, PowTTL, powTTL(0))
	assert.Equal(t, PowTTL, powTTL(20))
	assert.Equal(t, 2*PowTTL, powTTL(21))
	assert.Equal(t, 4096*PowTTL, powTTL(32))
}

// BenchmarkCheckProof is the server's cost of checking a proof of work: a
// challenge's HMAC and one SHA-256.
func BenchmarkCheckProof(b *testing.B) {
	s, err := NewSigner([]string{strings.Repeat("k", 32)})
	require.NoError(b, err)
	proof := solve(s.SignChallenge(7, "alice", t0.Add(PowTTL)), 16)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.CheckProof(proof, 7, 16, "alice", t0); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzCheckProof: whatever a client sends as a proof is refused with one
// of the proof errors or accepted only when it is a signed, unexpired
// challenge of this SKU with enough zero bits; never a panic.
func FuzzCheckProof(f *testing.F) {
	s, err := NewSigner([]string{strings.Repeat("k", 32)})
	require.NoError(f, err)
	c := s.SignChallenge(7, "alice", t0.Add(PowTTL))
	f.Add(solve(c, 4))
	f.Add(c + ":")
	f.Add("c1.7.1.x.y.z:1")
	f.Add("c1......:-")
	f.Add(":::")
	f.Fuzz(func(t *testing.T, proof string) {
		p, err := s.CheckProof(proof, 7, 4, "alice", t0)
		if err != nil {
			for _, e := range []error{ErrPowMalformed, ErrPowForged, ErrPowWrongSKU, ErrPowExpired, ErrPowUnsolved} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("%q: an error of no kind: %v", proof, err)
		}
		// Accepted: a challenge this signer signed (each fuzzing process
		// signs its own seed), of SKU 7, unexpired, solved.
		if !strings.HasPrefix(proof, "c1.7.") || !Solved(proof, 4) || len(p.ID) != 22 || !p.Expires.After(t0) {
			t.Fatalf("%q accepted", proof)
		}
	})
}

// The operator's controls and the proof of work together: a paused room
// still issues a ticket to a first join with a proof, and none without;
// a closed room issues none, a join without a proof is told the room is
// closed rather than asked for one, and a proof sent to it is not used up.
func TestProofOfWorkUnderTheControls(t *testing.T) {
	for _, j := range joiners(t) {
		t.Run(j.name, func(t *testing.T) {
			f := newFixture(t, 10, 1, catalog.Room{PowBits: powBits})
			f.control(f.room, ActionPause)
			_, err := j.join(f, "alice", "")
			assert.ErrorIs(t, err, ErrPowRequired)
			st, err := j.join(f, "alice", solve(f.challenge("alice").Challenge, powBits))
			require.NoError(t, err)
			assert.Equal(t, Waiting, st.Status)

			f.control(f.room, ActionClose)
			st, err = j.join(f, "bob", "")
			require.NoError(t, err)
			assert.Equal(t, Closed, st.Status)
			assert.Equal(t, roomClosed, st.Reason)
			st, err = j.join(f, "bob", solve(f.challenge("bob").Challenge, powBits))
			require.NoError(t, err)
			assert.Equal(t, Closed, st.Status)
			who, used := f.written()
			assert.Equal(t, int64(1), who, "alice's ticket only")
			assert.Equal(t, int64(1), used, "bob's proof not used up")
		})
	}
}
