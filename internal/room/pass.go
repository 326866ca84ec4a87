package room

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"sync"
	"time"
)

// Pass errors. A buy of a SKU with a waiting room without a pass is
// ErrPassRequired; with a pass that is not a valid one for this shopper and
// SKU now (forged, another's, another SKU's, expired, malformed), or one
// already spent, ErrPassInvalid.
var (
	ErrPassRequired = errors.New("this sale has a waiting room: join it and buy with the pass it gives")
	ErrPassInvalid  = errors.New("the waiting room pass is not valid")
)

// MaxPassLen bounds a pass a client sends; a real one is about 110 bytes.
const MaxPassLen = 256

// minKeyLen is the shortest pass key accepted: 32 bytes, HMAC-SHA256's
// block of security.
const minKeyLen = 32

// Signer signs and checks passes with HMAC-SHA256. It holds one or more
// keys: the first signs, every one verifies, so a key is rotated by adding
// the new one first, waiting a pass lifetime, and then removing the old.
type Signer struct {
	keys []passKey
}

type passKey struct {
	id     string // the first 8 hex characters of the key's SHA-256
	secret []byte
	macs   *sync.Pool // of *macState under secret
}

// NewSigner returns a signer of the keys given, the first signing; each
// must be at least 32 bytes.
func NewSigner(keys []string) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("room: no pass key")
	}
	s := &Signer{}
	for i, k := range keys {
		if len(k) < minKeyLen {
			return nil, fmt.Errorf("room: pass key %d is %d bytes: at least %d", i+1, len(k), minKeyLen)
		}
		sum := sha256.Sum256([]byte(k))
		secret := []byte(k)
		s.keys = append(s.keys, passKey{id: hex.EncodeToString(sum[:4]), secret: secret,
			macs: &sync.Pool{New: func() any { return newMacState(secret) }}})
	}
	return s, nil
}

// Sign returns the pass of ticket for user on sku, valid until exp:
// "p1.<sku>.<ticket>.<expiry Unix ms>.<key id>.<MAC>", the MAC binding it
// to the shopper, who is not named in it.
func (s *Signer) Sign(sku uint64, ticket, user string, exp time.Time) string {
	k := s.keys[0]
	head := "p1." + strconv.FormatUint(sku, 10) + "." + ticket + "." + strconv.FormatInt(exp.UnixMilli(), 10) + "." + k.id
	return head + "." + mac(k.secret, head, user)
}

// Check returns the ticket of pass and its expiry if it is a pass of one
// of the signer's keys for user on sku, unexpired at now; otherwise
// ErrPassInvalid, saying why. It runs on every buy of a SKU with a room, so
// it reads the pass in place and computes its MAC with a pooled HMAC,
// allocating nothing for a valid pass.
func (s *Signer) Check(pass string, sku uint64, user string, now time.Time) (string, time.Time, error) {
	if len(pass) > MaxPassLen {
		return "", time.Time{}, fmt.Errorf("%w: longer than %d bytes", ErrPassInvalid, MaxPassLen)
	}
	// p1.<sku>.<ticket>.<expiry>.<key id>.<MAC>: five dots, none after.
	dots, ok := fiveDots(pass)
	if !ok || pass[:dots[0]] != "p1" {
		return "", time.Time{}, fmt.Errorf("%w: not a pass", ErrPassInvalid)
	}
	head, kid, sent := pass[:dots[4]], pass[dots[3]+1:dots[4]], pass[dots[4]+1:]
	var key *passKey
	for i := range s.keys {
		if s.keys[i].id == kid {
			key = &s.keys[i]
		}
	}
	if key == nil || !key.verify(head, user, sent) {
		return "", time.Time{}, fmt.Errorf("%w: not signed by this sale for this shopper", ErrPassInvalid)
	}
	if id := pass[dots[0]+1 : dots[1]]; id != strconv.FormatUint(sku, 10) {
		return "", time.Time{}, fmt.Errorf("%w: a pass of sku %s", ErrPassInvalid, id)
	}
	exp, err := strconv.ParseInt(pass[dots[2]+1:dots[3]], 10, 64)
	if err != nil || now.UnixMilli() >= exp {
		return "", time.Time{}, fmt.Errorf("%w: expired; join the waiting room again to see your place", ErrPassInvalid)
	}
	return pass[dots[1]+1 : dots[2]], time.UnixMilli(exp), nil
}

// macLen is the length of a pass's MAC: 32 bytes in unpadded base64url.
const macLen = 43

// mac is the base64url HMAC-SHA256 of head and user under secret.
func mac(secret []byte, head, user string) string {
	m := newMacState(secret)
	return string(m.sum(head, user))
}

// macState computes MACs under one key with buffers of its own, so that
// a pooled one allocates nothing.
type macState struct {
	h        hash.Hash
	msg, raw []byte
	enc      [macLen]byte
}

func newMacState(secret []byte) *macState {
	return &macState{h: hmac.New(sha256.New, secret)}
}

// sum returns the base64url HMAC of head, a newline and user (valid until
// the next call).
func (m *macState) sum(head, user string) []byte {
	m.h.Reset()
	m.msg = append(append(append(m.msg[:0], head...), '\n'), user...)
	m.h.Write(m.msg)
	m.raw = m.h.Sum(m.raw[:0])
	base64.RawURLEncoding.Encode(m.enc[:], m.raw)
	return m.enc[:]
}

// verify reports, in constant time, whether sent is the MAC of head and
// user under k.
func (k *passKey) verify(head, user, sent string) bool {
	if len(sent) != macLen {
		return false
	}
	m := k.macs.Get().(*macState)
	want := m.sum(head, user)
	var diff byte
	for i := range macLen {
		diff |= want[i] ^ sent[i]
	}
	k.macs.Put(m)
	return diff == 0
}

// fiveDots returns where the five dots of s are, a pass's or a
// challenge's: false if it has more or fewer.
func fiveDots(s string) ([5]int, bool) {
	var dots [5]int
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '.' {
			continue
		}
		if n == len(dots) {
			return dots, false
		}
		dots[n] = i
		n++
	}
	return dots, n == len(dots)
}
