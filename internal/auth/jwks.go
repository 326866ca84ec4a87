package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"

	"github.com/seckill/seckill/internal/config"
)

const (
	// KeyWait is the longest a token with an unknown kid waits for a fetch
	// of the key set; tokens with known keys never wait.
	KeyWait = time.Second
	// MinRefetch is the shortest time between two fetches that unknown kids
	// or a failed fetch start, so a flood of made-up kids costs one fetch.
	MinRefetch = 10 * time.Second

	fetchTimeout = 5 * time.Second
	maxSetBytes  = 1 << 20
)

// publicKey is a verification key of the set and the algorithm it names.
type publicKey struct {
	key any
	alg string // "" when the JWK names none
}

// keySet holds the JWK Set's keys by kid, swapped whole on every fetch, so
// lookups take no lock.
type keySet struct {
	log   *slog.Logger
	fetch func(ctx context.Context) (map[string]publicKey, error)
	keys  atomic.Pointer[map[string]publicKey]

	mu     sync.Mutex
	done   chan struct{} // closed when the fetch in flight ends; nil when none
	last   time.Time     // when the last fetch for an unknown kid started
	closed bool
	quit   chan struct{}
	wg     sync.WaitGroup
}

func newKeySet(ctx context.Context, cfg config.Auth, log *slog.Logger) (*keySet, error) {
	s := &keySet{log: log, quit: make(chan struct{})}
	empty := map[string]publicKey{}
	s.keys.Store(&empty)
	if cfg.JWTJWKSFile != "" {
		path := cfg.JWTJWKSFile
		s.fetch = func(context.Context) (map[string]publicKey, error) {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("auth: read JWK Set: %w", err)
			}
			return parseKeySet(data)
		}
		keys, err := s.fetch(ctx)
		if err != nil {
			return nil, err
		}
		s.keys.Store(&keys)
		return s, nil // a file is read again only on an unknown kid
	}
	s.fetch = fetchURL(cfg.JWTJWKSURL)
	<-s.refetch(true)
	if len(*s.keys.Load()) == 0 {
		log.Error("no JWT verification keys yet: every shopper token is refused until the JWK Set is fetched", "url", cfg.JWTJWKSURL)
	}
	s.wg.Add(1)
	go s.refresh(cfg.JWTJWKSRefresh)
	return s, nil
}

// refresh fetches the set every interval until Close, and every MinRefetch
// while it holds no key.
func (s *keySet) refresh(every time.Duration) {
	defer s.wg.Done()
	for {
		wait := every
		if len(*s.keys.Load()) == 0 {
			wait = MinRefetch
		}
		select {
		case <-s.quit:
			return
		case <-time.After(wait):
		}
		if done := s.refetch(true); done != nil {
			<-done
		}
	}
}

// Close stops the refreshes and waits for the fetch in flight.
func (s *keySet) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	done := s.done
	s.mu.Unlock()
	close(s.quit)
	s.wg.Wait()
	if done != nil {
		<-done
	}
}

// refetch starts a fetch unless one is in flight (it then returns that one's
// channel) or, when not periodic, one for an unknown kid started less than
// MinRefetch ago (it then returns nil). The returned channel is closed when
// the fetch ends.
func (s *keySet) refetch(periodic bool) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil {
		return s.done
	}
	if s.closed || !periodic && time.Since(s.last) < MinRefetch {
		return nil
	}
	if !periodic {
		s.last = time.Now()
	}
	done := make(chan struct{})
	s.done = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
		keys, err := s.fetch(ctx)
		cancel()
		if err != nil {
			s.log.Warn("JWK Set not fetched; keeping the keys held", "err", err.Error())
		} else {
			s.keys.Store(&keys)
		}
		s.mu.Lock()
		s.done = nil
		s.mu.Unlock()
		close(done)
	}()
	return done
}

// find returns the key named kid; a token without kid may use the set's
// only key.
func (s *keySet) find(kid string) (publicKey, bool) {
	keys := *s.keys.Load()
	if k, ok := keys[kid]; ok {
		return k, true
	}
	if kid == "" && len(keys) == 1 {
		for _, k := range keys {
			return k, true
		}
	}
	return publicKey{}, false
}

// keyFunc finds the token's key, waiting at most KeyWait (or until ctx ends)
// for one fetch when its kid is unknown, and checks that the key is of the
// token's algorithm.
func (s *keySet) keyFunc(ctx context.Context) jwt.Keyfunc {
	return func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := s.find(kid)
		if !ok {
			if done := s.refetch(false); done != nil {
				timer := time.NewTimer(KeyWait)
				select {
				case <-done:
				case <-timer.C:
				case <-ctx.Done():
				}
				timer.Stop()
				k, ok = s.find(kid)
			}
		}
		if !ok {
			return nil, ErrUnknownKey
		}
		return k.forAlg(t.Method.Alg())
	}
}

var errKeyAlg = errors.New("the key does not fit the token's algorithm")

func (k publicKey) forAlg(alg string) (any, error) {
	if k.alg != "" && k.alg != alg {
		return nil, errKeyAlg
	}
	switch key := k.key.(type) {
	case *rsa.PublicKey:
		if alg == jwt.SigningMethodRS256.Alg() {
			return key, nil
		}
	case *ecdsa.PublicKey:
		if alg == jwt.SigningMethodES256.Alg() && key.Curve == elliptic.P256() {
			return key, nil
		}
	}
	return nil, errKeyAlg
}

func fetchURL(url string) func(ctx context.Context) (map[string]publicKey, error) {
	client := &http.Client{Timeout: fetchTimeout}
	return func(ctx context.Context) (map[string]publicKey, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, fmt.Errorf("auth: JWK Set request: %w", err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("auth: fetch JWK Set: %w", err)
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("auth: fetch JWK Set: status %d", resp.StatusCode)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, maxSetBytes+1))
		if err != nil {
			return nil, fmt.Errorf("auth: read JWK Set: %w", err)
		}
		if len(data) > maxSetBytes {
			return nil, errors.New("auth: JWK Set larger than 1 MiB")
		}
		return parseKeySet(data)
	}
}

// parseKeySet keeps the set's RSA and EC P-256 signing keys (parsed by
// jwkset); symmetric and other keys are never used to verify.
func parseKeySet(data []byte) (map[string]publicKey, error) {
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, fmt.Errorf("auth: parse JWK Set: %w", err)
	}
	keys := map[string]publicKey{}
	for _, m := range set.Keys {
		if m.USE != "" && m.USE != jwkset.UseSig {
			continue
		}
		jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{}, jwkset.JWKValidateOptions{})
		if err != nil {
			continue
		}
		var pub any
		switch key := jwk.Key().(type) {
		case *rsa.PublicKey:
			pub = key
		case *rsa.PrivateKey:
			pub = &key.PublicKey
		case *ecdsa.PublicKey:
			pub = key
		case *ecdsa.PrivateKey:
			pub = &key.PublicKey
		default:
			continue
		}
		keys[m.KID] = publicKey{key: pub, alg: m.ALG.String()}
	}
	if len(keys) == 0 {
		return nil, errors.New("auth: the JWK Set holds no RSA or EC signing key")
	}
	return keys, nil
}
