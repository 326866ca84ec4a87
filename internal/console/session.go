package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"sync"
	"time"
)

// A session is a signed cookie, not a record kept anywhere: its value is an
// expiry and a random id, with an HMAC of both under a key derived from the
// admin token. So every instance with the same token accepts the session
// another made, the token itself is never in the cookie, and a new admin
// token ends every session.

// cookieName is the session cookie's name; it is sent on /console paths
// only.
const cookieName = "seckill_console"

const (
	idLen  = 16
	macLen = sha256.Size
)

// session is a checked session cookie.
type session struct {
	id      [idLen]byte
	expires time.Time
}

// sessions issues and checks session cookies and their CSRF tokens.
type sessions struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

func newSessions(token string, ttl time.Duration, now func() time.Time) *sessions {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("seckill console session v1"))
	return &sessions{key: m.Sum(nil), ttl: ttl, now: now}
}

func (s *sessions) mac(parts ...[]byte) []byte {
	m := hmac.New(sha256.New, s.key)
	for _, p := range parts {
		m.Write(p)
	}
	return m.Sum(nil)
}

// issue makes a new session and its cookie value.
func (s *sessions) issue() (session, string) {
	var ss session
	_, _ = rand.Read(ss.id[:])
	ss.expires = s.now().Add(s.ttl).Truncate(time.Second)
	var exp [8]byte
	binary.BigEndian.PutUint64(exp[:], uint64(ss.expires.Unix())) //nolint:gosec // a time after 1970: positive
	raw := append(append(exp[:], ss.id[:]...), s.mac([]byte("session"), exp[:], ss.id[:])...)
	return ss, base64.RawURLEncoding.EncodeToString(raw)
}

// check reads a cookie value: the session, if the value is one of ours and
// has not expired.
func (s *sessions) check(value string) (session, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) != 8+idLen+macLen {
		return session{}, false
	}
	exp, id, mac := raw[:8], raw[8:8+idLen], raw[8+idLen:]
	if !hmac.Equal(mac, s.mac([]byte("session"), exp, id)) {
		return session{}, false
	}
	var ss session
	copy(ss.id[:], id)
	ss.expires = time.Unix(int64(binary.BigEndian.Uint64(exp)), 0) //nolint:gosec // signed by us: a Unix time
	if !s.now().Before(ss.expires) {
		return session{}, false
	}
	return ss, true
}

// csrf is the session's CSRF token: derived from it, so any instance knows
// it without keeping it.
func (s *sessions) csrf(ss session) string {
	return base64.RawURLEncoding.EncodeToString(s.mac([]byte("csrf"), ss.id[:]))
}

// validCSRF reports whether got is the session's CSRF token.
func (s *sessions) validCSRF(ss session, got string) bool {
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.csrf(ss))) == 1
}

// cookie is the session cookie holding value, for a request that came over
// TLS when secure; an empty value with a negative maxAge deletes it.
func cookie(value string, maxAge int, secure bool) *http.Cookie {
	//nolint:gosec // Secure is set whenever the request came over TLS; over plain HTTP the browser would never send it back
	return &http.Cookie{Name: cookieName, Value: value, Path: "/console", MaxAge: maxAge,
		HttpOnly: true, Secure: secure, SameSite: http.SameSiteStrictMode}
}

// overTLS reports whether r reached the client over TLS: directly, or
// through a proxy that says so. A client that claims TLS falsely only gets
// a cookie its browser will not send back over plain HTTP.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// sameToken compares a login's token with the admin token in constant
// time, whatever their lengths.
func sameToken(got, want string) bool {
	a, b := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(a[:], b[:]) == 1
}

// failures counts logins per client address: after max in a window whose
// token was not right, the address's logins are refused until the window
// ends, so the admin token cannot be guessed at the speed of the network.
// A login is counted before its token is read (attempt) and forgiven once
// it is right, so that logins arriving together cannot all pass the
// limit. It holds at most maxAddresses addresses: when full, it forgets
// those whose window ended, and starts over only if none had.
type failures struct {
	mu     sync.Mutex
	window time.Duration
	max    int
	now    func() time.Time
	seen   map[string]*tries
}

type tries struct {
	n     int
	since time.Time
}

const maxAddresses = 10_000

func newFailures(limit int, window time.Duration, now func() time.Time) *failures {
	return &failures{window: window, max: limit, now: now, seen: map[string]*tries{}}
}

// attempt counts a login from addr, unless addr has used up its logins:
// then it answers how much longer it must wait, and false.
func (f *failures) attempt(addr string) (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	t, ok := f.seen[addr]
	if !ok || !now.Before(t.since.Add(f.window)) {
		if len(f.seen) >= maxAddresses {
			for a, t := range f.seen {
				if !now.Before(t.since.Add(f.window)) {
					delete(f.seen, a)
				}
			}
			if len(f.seen) >= maxAddresses {
				clear(f.seen)
			}
		}
		t = &tries{since: now}
		f.seen[addr] = t
	}
	if t.n >= f.max {
		return t.since.Add(f.window).Sub(now), false
	}
	t.n++
	return 0, true
}

// forgive takes back the count of a login from addr whose token was right.
func (f *failures) forgive(addr string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t, ok := f.seen[addr]; ok && t.n > 0 {
		t.n--
	}
}
