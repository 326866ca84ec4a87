package room

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
		s.keys = append(s.keys, passKey{id: hex.EncodeToString(sum[:4]), secret: []byte(k)})
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

// Check returns the ticket of pass if it is a pass of one of the signer's
// keys for user on sku, unexpired at now; otherwise ErrPassInvalid, saying
// why.
func (s *Signer) Check(pass string, sku uint64, user string, now time.Time) (string, error) {
	if len(pass) > MaxPassLen {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrPassInvalid, MaxPassLen)
	}
	parts := strings.Split(pass, ".")
	if len(parts) != 6 || parts[0] != "p1" {
		return "", fmt.Errorf("%w: not a pass", ErrPassInvalid)
	}
	head := strings.Join(parts[:5], ".")
	var key *passKey
	for i := range s.keys {
		if s.keys[i].id == parts[4] {
			key = &s.keys[i]
		}
	}
	if key == nil || !hmac.Equal([]byte(parts[5]), []byte(mac(key.secret, head, user))) {
		return "", fmt.Errorf("%w: not signed by this sale for this shopper", ErrPassInvalid)
	}
	if parts[1] != strconv.FormatUint(sku, 10) {
		return "", fmt.Errorf("%w: a pass of sku %s", ErrPassInvalid, parts[1])
	}
	exp, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || now.UnixMilli() >= exp {
		return "", fmt.Errorf("%w: expired; join the waiting room again to see your place", ErrPassInvalid)
	}
	return parts[2], nil
}

// mac is the base64url HMAC-SHA256 of head and user under secret.
func mac(secret []byte, head, user string) string {
	h := hmac.New(sha256.New, secret)
	h.Write([]byte(head))
	h.Write([]byte{'\n'})
	h.Write([]byte(user))
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
