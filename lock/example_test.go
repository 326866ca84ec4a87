package lock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/lock"
)

// exampleRedis connects to SECKILL_TEST_REDIS_ADDR (or 127.0.0.1:6379) and
// returns a unique key prefix and a cleanup that deletes its keys.
func exampleRedis() (*redis.Client, string, func()) {
	addr := os.Getenv("SECKILL_TEST_REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	prefix := "example:" + randomHex() + ":"
	return rdb, prefix, func() {
		ctx := context.Background()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		_ = rdb.Close()
	}
}

func randomHex() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func Example() {
	rdb, prefix, cleanup := exampleRedis()
	defer cleanup()
	locks := lock.New(rdb, lock.Options{Prefix: prefix})
	defer locks.Close()
	ctx := context.Background()

	m, err := locks.TryLock(ctx, "{sku:42}", 5*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("locked", strings.TrimPrefix(m.Key(), prefix))

	_, err = locks.TryLock(ctx, "{sku:42}", 5*time.Second)
	fmt.Println("second try:", err, errors.Is(err, lock.ErrNotObtained))

	fmt.Println("unlock:", m.Unlock(ctx))
	fmt.Println("unlock again:", m.Unlock(ctx))
	// Output:
	// locked lock:{sku:42}
	// second try: lock: not obtained true
	// unlock: <nil>
	// unlock again: lock: not held
}

func ExampleClient_Lock() {
	rdb, prefix, cleanup := exampleRedis()
	defer cleanup()
	locks := lock.New(rdb, lock.Options{Prefix: prefix})
	defer locks.Close()
	ctx := context.Background()

	first, _ := locks.TryLock(ctx, "report", time.Minute)
	go func() {
		time.Sleep(10 * time.Millisecond)
		_ = first.Unlock(ctx)
	}()
	// Woken by the release message, not by polling.
	m, err := locks.Lock(ctx, "report", time.Minute, lock.WithWaitTimeout(10*time.Second))
	fmt.Println("got it:", err == nil)
	_ = m.Unlock(ctx)

	held, _ := locks.TryLock(ctx, "report", time.Minute)
	_, err = locks.Lock(ctx, "report", time.Minute, lock.WithWaitTimeout(20*time.Millisecond))
	fmt.Println(errors.Is(err, lock.ErrWaitTimeout), errors.Is(err, lock.ErrNotObtained))
	_ = held.Unlock(ctx)
	// Output:
	// got it: true
	// true true
}

// The sale path locks "{sku:42}" with a fencing token and checks both inside
// its own script, whose keys share the hash tag.
func ExampleWithFencing() {
	rdb, prefix, cleanup := exampleRedis()
	defer cleanup()
	locks := lock.New(rdb, lock.Options{Prefix: prefix})
	defer locks.Close()
	ctx := context.Background()

	sell := redis.NewScript(`
-- KEYS[1] lock key, KEYS[2] stock, KEYS[3] highest fence seen; ARGV[1] token, ARGV[2] fence
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return -1 end
if tonumber(redis.call('GET', KEYS[3]) or '0') >= tonumber(ARGV[2]) then return -2 end
redis.call('SET', KEYS[3], ARGV[2])
return redis.call('DECR', KEYS[2])`)
	stock, fence := prefix+"{sku:42}:stock", prefix+"{sku:42}:fence-seen"
	rdb.Set(ctx, stock, 10, 0)

	m, _ := locks.TryLock(ctx, "{sku:42}", time.Second, lock.WithFencing())
	left, err := sell.Run(ctx, rdb, []string{m.Key(), stock, fence}, m.Token(), m.Fence()).Int64()
	fmt.Println("left:", left, err)
	_ = m.Unlock(ctx)

	// A holder whose lock is gone is refused.
	left, _ = sell.Run(ctx, rdb, []string{m.Key(), stock, fence}, m.Token(), m.Fence()).Int64()
	fmt.Println("stale holder:", left)
	// Output:
	// left: 9 <nil>
	// stale holder: -1
}

func ExampleWithWatchdog() {
	rdb, prefix, cleanup := exampleRedis()
	defer cleanup()
	locks := lock.New(rdb, lock.Options{Prefix: prefix})
	defer locks.Close()
	ctx := context.Background()

	m, _ := locks.TryLock(ctx, "import", 300*time.Millisecond, lock.WithWatchdog(0))
	work, cancel := m.Context(ctx) // cancelled the moment the lock is lost
	defer cancel()

	rdb.Del(ctx, m.Key()) // someone deletes the lock behind our back
	<-work.Done()
	fmt.Println(context.Cause(work))
	fmt.Println(m.Unlock(ctx))
	// Output:
	// lock: lost
	// lock: not held
}

func ExampleOwner() {
	rdb, prefix, cleanup := exampleRedis()
	defer cleanup()
	locks := lock.New(rdb, lock.Options{Prefix: prefix})
	defer locks.Close()
	ctx := context.Background()

	session := locks.NewOwner("session-7")
	outer, _ := session.TryLockReentrant(ctx, "cart", time.Minute)
	inner, _ := session.TryLockReentrant(ctx, "cart", time.Minute) // same owner: enters again
	_, err := locks.NewOwner("session-8").TryLockReentrant(ctx, "cart", time.Minute)
	fmt.Println("other owner:", err)

	n, _ := inner.Unlock(ctx)
	fmt.Println("still held:", n)
	_, _ = session.TryLock(ctx, "coupon", time.Minute)
	_, _ = session.RWMutex("catalog").TryRLock(ctx, time.Minute)
	_ = outer
	fmt.Println("holding", session.Len())
	fmt.Println("unlock all:", session.UnlockAll(ctx), session.Len())
	// Output:
	// other owner: lock: not obtained
	// still held: 1
	// holding 3
	// unlock all: <nil> 0
}

func ExampleRWMutex() {
	rdb, prefix, cleanup := exampleRedis()
	defer cleanup()
	locks := lock.New(rdb, lock.Options{Prefix: prefix})
	defer locks.Close()
	ctx := context.Background()

	rw := locks.RWMutex("{sku:42}")
	r1, _ := rw.TryRLock(ctx, time.Minute)
	r2, err := rw.TryRLock(ctx, time.Minute)
	fmt.Println("two readers:", err)
	_, err = rw.TryLock(ctx, time.Minute)
	fmt.Println("writer:", err)
	_ = r1.Unlock(ctx)
	_ = r2.Unlock(ctx)
	w, err := rw.TryLock(ctx, time.Minute)
	fmt.Println("writer after readers:", err)
	_ = w.Unlock(ctx)
	// Output:
	// two readers: <nil>
	// writer: lock: not obtained
	// writer after readers: <nil>
}

func ExampleNewRedlock() {
	addrs := os.Getenv("SECKILL_TEST_REDLOCK_ADDRS")
	if addrs == "" {
		addrs = "127.0.0.1:6381,127.0.0.1:6382,127.0.0.1:6383,127.0.0.1:6384,127.0.0.1:6385"
	}
	prefix := "example:" + randomHex() + ":"
	var nodes []redis.UniversalClient
	for _, a := range strings.Split(addrs, ",") {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})
		defer c.Close()
		nodes = append(nodes, c)
	}
	rl := lock.NewRedlock(nodes, lock.RedlockOptions{Prefix: prefix})
	defer rl.Close()
	ctx := context.Background()

	m, err := rl.TryLock(ctx, "payout", 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("quorum:", rl.Quorum(), "valid for less than the TTL:", m.Validity() < 10*time.Second)
	fmt.Println(m.Unlock(ctx))
	// Output:
	// quorum: 3 valid for less than the TTL: true
	// <nil>
}
