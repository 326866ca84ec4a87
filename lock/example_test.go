package lock_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lock"
)

// newClient connects to the Redis at SECKILL_TEST_REDIS_ADDR and returns a
// Client whose keys start with a prefix of its own, and a func that deletes
// them and closes both.
func newClient() (*lock.Client, *redis.Client, func()) {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("SECKILL_TEST_REDIS_ADDR")})
	prefix := "example:" + rand.Text()[:8] + ":"
	locks := lock.New(rdb, lock.WithPrefix(prefix))
	return locks, rdb, func() {
		_ = locks.Close()
		ctx := context.Background()
		for iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator(); iter.Next(ctx); {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	}
}

// One holder at a time: TryLock makes one attempt, Unlock releases.
func Example() {
	locks, _, done := newClient()
	defer done()
	ctx := context.Background()

	l, err := locks.TryLock(ctx, "report", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = locks.TryLock(ctx, "report", 10*time.Second)
	fmt.Println("second try:", err, errors.Is(err, lock.ErrNotObtained))

	fmt.Println("unlock:", l.Unlock(ctx))
	fmt.Println("unlock again:", l.Unlock(ctx))
	// Output:
	// second try: lock: not obtained true
	// unlock: <nil>
	// unlock again: lock: not held
}

// Lock waits for the holder's release, woken by its pub/sub message;
// WithWait bounds the wait.
func ExampleClient_Lock() {
	locks, _, done := newClient()
	defer done()
	ctx := context.Background()

	first, _ := locks.TryLock(ctx, "report", time.Minute)
	go func() {
		time.Sleep(10 * time.Millisecond)
		_ = first.Unlock(ctx)
	}()
	l, err := locks.Lock(ctx, "report", time.Minute, lock.WithWait(10*time.Second))
	fmt.Println("got it after the release:", err)

	_, err = locks.Lock(ctx, "report", time.Minute, lock.WithWait(20*time.Millisecond))
	fmt.Println(err, errors.Is(err, lock.ErrWaitTimeout), errors.Is(err, lock.ErrNotObtained))
	_ = l.Unlock(ctx)
	// Output:
	// got it after the release: <nil>
	// lock: not obtained: wait deadline reached true true
}

// Done is closed, and Context cancelled, the moment a lease is known lost:
// here the watchdog finds the key gone.
func ExampleLease_Done() {
	locks, rdb, done := newClient()
	defer done()
	ctx := context.Background()

	l, _ := locks.TryLock(ctx, "import", time.Second, lock.WithWatchdog(0))
	work, cancel := l.Context(ctx) // stop the work when the lock is lost
	defer cancel()

	rdb.Del(ctx, l.Key()) // the lock disappears behind the holder's back
	<-l.Done()
	<-work.Done()
	fmt.Println(l.Err(), context.Cause(work))
	fmt.Println(l.Unlock(ctx))
	// Output:
	// lock: lost lock: lost
	// lock: not held
}

// The watchdog renews the lock every ttl/3 while the work runs, so the TTL
// can be short: a holder that dies frees the lock within a second.
func ExampleWithWatchdog() {
	locks, _, done := newClient()
	defer done()
	ctx := context.Background()

	l, _ := locks.TryLock(ctx, "nightly", time.Second, lock.WithWatchdog(0))
	time.Sleep(2 * time.Second) // work longer than the TTL

	ttl, err := l.TTL(ctx)
	fmt.Println("still held:", err == nil && ttl > 0, l.Err())
	fmt.Println(l.Unlock(ctx))
	// Output:
	// still held: true <nil>
	// <nil>
}

// A store that remembers the highest fence it accepted refuses a holder
// whose lock expired while it was paused, after the next holder wrote.
func ExampleWithFencing() {
	locks, _, done := newClient()
	defer done()
	ctx := context.Background()
	store := &fencedStore{}

	a, _ := locks.TryLock(ctx, "{doc:7}", 50*time.Millisecond, lock.WithFencing())
	time.Sleep(100 * time.Millisecond) // a pauses; its lock expires
	b, _ := locks.Lock(ctx, "{doc:7}", time.Minute, lock.WithFencing(), lock.WithWait(time.Second))
	fmt.Println("b writes:", store.write(b.Fence(), "from b"))
	fmt.Println("a writes:", store.write(a.Fence(), "from a"))
	fmt.Println(store.value, b.Fence() > a.Fence())
	_ = b.Unlock(ctx)
	// Output:
	// b writes: <nil>
	// a writes: stale fence
	// from b true
}

// fencedStore stands for any resource that checks fences: a database row
// with a fence column, a file server, a payment API.
type fencedStore struct {
	mu      sync.Mutex
	highest int64
	value   string
}

func (s *fencedStore) write(fence int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if fence <= s.highest {
		return errors.New("stale fence")
	}
	s.highest, s.value = fence, value
	return nil
}

// An Owner re-enters its own lock; another owner waits until every hold is
// released.
func ExampleClient_Owner() {
	locks, _, done := newClient()
	defer done()
	ctx := context.Background()

	session := locks.Owner("session-7")
	outer, _ := session.TryLock(ctx, "cart", time.Minute)
	inner, err := session.TryLock(ctx, "cart", time.Minute) // nested call: enters again
	fmt.Println("same owner:", err)
	_, err = locks.Owner("session-8").TryLock(ctx, "cart", time.Minute)
	fmt.Println("other owner:", err)

	_ = inner.Unlock(ctx)
	_, err = locks.Owner("session-8").TryLock(ctx, "cart", time.Minute)
	fmt.Println("after one release:", err)
	_ = outer.Unlock(ctx)
	_, err = locks.Owner("session-8").TryLock(ctx, "cart", time.Minute)
	fmt.Println("after both:", err)
	// Output:
	// same owner: <nil>
	// other owner: lock: not obtained
	// after one release: lock: not obtained
	// after both: <nil>
}

// Readers share the lock; a writer waits for them, and new readers wait
// for the writer.
func ExampleClient_RWMutex() {
	locks, _, done := newClient()
	defer done()
	ctx := context.Background()

	rw := locks.RWMutex("price-list")
	r1, _ := rw.TryRLock(ctx, time.Minute)
	r2, err := rw.TryRLock(ctx, time.Minute)
	fmt.Println("two readers:", err)
	_, err = rw.TryLock(ctx, time.Minute)
	fmt.Println("writer:", err)

	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	w, err := rw.TryLock(ctx, time.Minute)
	fmt.Println("writer after the readers:", err)
	_, err = rw.TryRLock(ctx, time.Minute)
	fmt.Println("reader during the write:", err)
	_ = w.Unlock(ctx)
	// Output:
	// two readers: <nil>
	// writer: lock: not obtained
	// writer after the readers: <nil>
	// reader during the write: lock: not obtained
}

// Redlock holds the lock when a majority of independent masters took it in
// time; it survives the loss of a minority of them.
func ExampleNewRedlock() {
	var nodes []redis.UniversalClient
	for _, addr := range strings.Split(os.Getenv("SECKILL_TEST_REDLOCK_ADDRS"), ",") {
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer c.Close()
		nodes = append(nodes, c)
	}
	rl := lock.NewRedlock(nodes, lock.WithPrefix("example:"+rand.Text()[:8]+":"))
	defer rl.Close()
	ctx := context.Background()

	l, err := rl.TryLock(ctx, "payout", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = rl.TryLock(ctx, "payout", 10*time.Second)
	fmt.Println("second try:", err)
	fmt.Println("unlock on every node:", l.Unlock(ctx))
	// Output:
	// second try: lock: not obtained
	// unlock on every node: <nil>
}
