package room

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// A room with pow_bits asks a shopper's first join for a proof of work: a
// challenge the server signed for the shopper and the SKU (Challenge), and
// a nonce such that the SHA-256 of "<challenge>:<nonce>" starts with at
// least pow_bits zero bits. The proof is checked in process (CheckProof);
// the room script records its challenge with the ticket it issues, so that
// it issues at most one.

// Proof of work errors. A join that needs a proof and has none is
// ErrPowRequired; each way a proof fails has an error of its own, so that
// a shop front can tell a bug from an expired challenge to fetch again.
var (
	ErrPowOff       = errors.New("this waiting room asks for no proof of work")
	ErrPowRequired  = errors.New("this waiting room asks a first join for a proof of work: get a challenge from GET /api/v1/skus/{id}/queue/challenge, solve it and join with the Seckill-PoW header")
	ErrPowMalformed = errors.New("the Seckill-PoW header must be <challenge>:<nonce>")
	ErrPowForged    = errors.New("the proof of work's challenge was not signed by this sale for this shopper")
	ErrPowWrongSKU  = errors.New("the proof of work's challenge is another SKU's")
	ErrPowExpired   = errors.New("the proof of work's challenge has expired: get a new one")
	ErrPowUnsolved  = errors.New("the proof of work's hash has too few leading zero bits")
	ErrPowUsed      = errors.New("the proof of work's challenge was used already: get a new one")
)

// Bounds of a proof of work as a client sends it: a challenge is about 115
// bytes.
const (
	MaxChallengeLen = 160
	MaxNonceLen     = 64
	MaxProofLen     = MaxChallengeLen + 1 + MaxNonceLen
)

// PowTTL is how long a challenge of up to 20 bits is valid; each bit more
// doubles it, as it doubles the expected time to solve.
const PowTTL = 2 * time.Minute

// powTTL is how long a challenge of bits is valid.
func powTTL(bits int) time.Duration {
	return PowTTL << max(bits-20, 0)
}

// Challenge is a proof of work to solve before a first join.
type Challenge struct {
	Challenge string    `json:"challenge"`
	Bits      int       `json:"bits"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Proof is a checked proof of work: its challenge's id and expiry.
type Proof struct {
	ID      string
	Expires time.Time
}

// Challenge returns a new challenge for user's first join of the room of
// the SKU with id sku: ErrNoRoom without a room, ErrNotOpen before the
// room opens (a challenge solved ahead would let its solver join at the
// opening at no cost then), ErrSaleOver once the sale has ended, ErrPowOff
// for a room that asks for no proof.
func (r *Room) Challenge(ctx context.Context, id uint64, user string) (Challenge, error) {
	sku, _, closed, err := r.open(ctx, id)
	if err != nil {
		return Challenge{}, err
	}
	if closed != nil {
		return Challenge{}, ErrSaleOver
	}
	if sku.Room.PowBits == 0 {
		return Challenge{}, ErrPowOff
	}
	exp := r.o.Now().Add(powTTL(sku.Room.PowBits)).Truncate(time.Millisecond).UTC()
	return Challenge{Challenge: r.signer.SignChallenge(sku.ID, user, exp), Bits: sku.Room.PowBits, ExpiresAt: exp}, nil
}

// CheckProof checks proof, "<challenge>:<nonce>", for user's join of sku
// at now, in process.
func (r *Room) CheckProof(sku *catalog.SKU, user, proof string) (Proof, error) {
	return r.signer.CheckProof(proof, sku.ID, sku.Room.PowBits, user, r.o.Now())
}

// SignChallenge returns a challenge for user on sku, valid until exp:
// "c1.<sku>.<expiry Unix ms>.<id>.<key id>.<MAC>", the id 16 random bytes
// in base64url, the MAC binding it to the shopper as a pass's does (a
// pass's head starts "p1.", so neither is ever taken for the other).
func (s *Signer) SignChallenge(sku uint64, user string, exp time.Time) string {
	var id [16]byte
	_, _ = rand.Read(id[:])
	k := s.keys[0]
	head := "c1." + strconv.FormatUint(sku, 10) + "." + strconv.FormatInt(exp.UnixMilli(), 10) + "." +
		base64.RawURLEncoding.EncodeToString(id[:]) + "." + k.id
	return head + "." + mac(k.secret, head, user)
}

// CheckProof checks proof, "<challenge>:<nonce>", for user on sku at now:
// the challenge's form, signature, SKU and expiry, then that the SHA-256
// of the whole proof starts with bits zero bits: about a microsecond, with
// no store round trip (BenchmarkCheckProof).
func (s *Signer) CheckProof(proof string, sku uint64, bits int, user string, now time.Time) (Proof, error) {
	challenge, _, err := splitProof(proof)
	if err != nil {
		return Proof{}, err
	}
	// c1.<sku>.<expiry>.<id>.<key id>.<MAC>: five dots.
	dots, ok := fiveDots(challenge)
	if !ok || challenge[:dots[0]] != "c1" {
		return Proof{}, fmt.Errorf("%w: not a challenge", ErrPowMalformed)
	}
	head, kid, sent := challenge[:dots[4]], challenge[dots[3]+1:dots[4]], challenge[dots[4]+1:]
	var key *passKey
	for i := range s.keys {
		if s.keys[i].id == kid {
			key = &s.keys[i]
		}
	}
	if key == nil || !key.verify(head, user, sent) {
		return Proof{}, ErrPowForged
	}
	if id := challenge[dots[0]+1 : dots[1]]; id != strconv.FormatUint(sku, 10) {
		return Proof{}, fmt.Errorf("%w: sku %s", ErrPowWrongSKU, id)
	}
	exp, err := strconv.ParseInt(challenge[dots[1]+1:dots[2]], 10, 64)
	if err != nil || now.UnixMilli() >= exp {
		return Proof{}, ErrPowExpired
	}
	if !Solved(proof, bits) {
		return Proof{}, fmt.Errorf("%w: %d wanted", ErrPowUnsolved, bits)
	}
	return Proof{ID: challenge[dots[2]+1 : dots[3]], Expires: time.UnixMilli(exp)}, nil
}

// splitProof splits proof into its challenge and nonce, and checks their
// lengths and the nonce's characters: 1 to MaxNonceLen of A-Z a-z 0-9 - _.
func splitProof(proof string) (challenge, nonce string, err error) {
	if len(proof) > MaxProofLen {
		return "", "", fmt.Errorf("%w: longer than %d bytes", ErrPowMalformed, MaxProofLen)
	}
	colon := -1
	for i := 0; i < len(proof); i++ {
		if proof[i] == ':' {
			colon = i
			break
		}
	}
	if colon < 0 {
		return "", "", fmt.Errorf("%w: no colon", ErrPowMalformed)
	}
	challenge, nonce = proof[:colon], proof[colon+1:]
	if len(challenge) == 0 || len(challenge) > MaxChallengeLen {
		return "", "", fmt.Errorf("%w: the challenge must be 1 to %d bytes", ErrPowMalformed, MaxChallengeLen)
	}
	if len(nonce) == 0 || len(nonce) > MaxNonceLen {
		return "", "", fmt.Errorf("%w: the nonce must be 1 to %d characters", ErrPowMalformed, MaxNonceLen)
	}
	for i := 0; i < len(nonce); i++ {
		c := nonce[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return "", "", fmt.Errorf("%w: the nonce must be letters, digits, - or _", ErrPowMalformed)
		}
	}
	return challenge, nonce, nil
}

// Solved reports whether the SHA-256 of proof starts with at least bits
// zero bits (0 to 32).
func Solved(proof string, bits int) bool {
	if bits <= 0 {
		return true
	}
	sum := sha256.Sum256([]byte(proof))
	return binary.BigEndian.Uint32(sum[:4])>>(32-min(bits, 32)) == 0
}

// visitor is a shopper visiting a room, with the proof of work the room
// script is given for them: "" none needed (a look, a room without
// proof), "-" needed and none given, or the id of the challenge solved,
// with its expiry (Unix ms).
type visitor struct {
	user    string
	proof   string
	expires int64
}

// visitor checks the proof user sent (if any) for a visit op of sku, in
// process: a join of a room with pow_bits needs one unless the shopper
// holds a ticket, which only the room script knows.
func (r *Room) visitor(sku *catalog.SKU, user, op, proof string) (visitor, error) {
	v := visitor{user: user}
	if op != "join" || sku.Room.PowBits == 0 {
		return v, nil
	}
	if proof == "" {
		v.proof = "-"
		return v, nil
	}
	p, err := r.CheckProof(sku, user, proof)
	if err != nil {
		return visitor{}, err
	}
	v.proof, v.expires = p.ID, p.Expires.UnixMilli()
	return v, nil
}

// refused is the error of a join the room script issued no ticket to: nil
// if it answered one.
func (v visitor) refused(s shopperReply) error {
	switch {
	case s.reused:
		return ErrPowUsed
	case s.found:
		return nil
	case v.proof == "-":
		return ErrPowRequired
	}
	return ErrNoTicket
}
