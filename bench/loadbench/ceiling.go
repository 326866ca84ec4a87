package main

import (
	"context"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
)

// runCeiling serves the ceiling: a Gin engine with one no-op handler that
// answers every buy with a 409 body of the same size as seckill's sold-out
// answer. It is the fastest any Gin JSON endpoint can be on this machine.
//
// With LB_FLOOR_REDIS (an address) and LB_FLOOR_KEY set it also serves the
// durable floor, POST /api/v1/skus/:id/queue: the shopper (X-User-ID) is
// written into the hash LB_FLOOR_KEY with one HSETNX before a body of a
// join answer's size is sent, the writes of concurrent requests
// group-committed as the room's joins are (up to 64 in one pipeline, up to
// 4 pipelines in flight). Nothing else is done: it is the fastest a request
// whose write must be in Redis before its answer can be on this machine.
func runCeiling(addr, detail string) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.GET("/healthz", func(c *gin.Context) { c.JSON(http.StatusOK, gin.H{"status": "ok"}) })
	r.POST("/api/v1/orders", func(c *gin.Context) {
		c.JSON(http.StatusConflict, gin.H{"error": "sold_out", "detail": detail})
	})
	if raddr, key := os.Getenv("LB_FLOOR_REDIS"), os.Getenv("LB_FLOOR_KEY"); raddr != "" && key != "" {
		f := &floor{rdb: redis.NewClient(&redis.Options{Addr: raddr}), key: key}
		r.POST("/api/v1/skus/:id/queue", func(c *gin.Context) {
			if err := f.write(c.Request.Context(), c.GetHeader("X-User-ID")); err != nil {
				c.JSON(http.StatusServiceUnavailable, gin.H{"error": "unavailable", "detail": err.Error()})
				return
			}
			c.JSON(http.StatusOK, gin.H{"status": "waiting", "position": 123456, "ahead": 123455,
				"retry_after_ms": 30000, "ticket": "tabcdefghijklmnopqrstuvwxyz"})
		})
	}
	log.SetOutput(os.Stderr)
	// The timeouts of seckill's http defaults (configs/config.yaml), so that
	// both servers treat slow clients alike.
	srv := &http.Server{
		Addr:              addr,
		Handler:           r,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	log.Fatal(srv.ListenAndServe())
}

// floor group-commits HSETNX writes: a request that finds fewer than 4
// pipelines running runs them until none is waiting; the others wait for
// their answer.
type floor struct {
	rdb *redis.Client
	key string

	mu      sync.Mutex
	waiting []floorWrite
	running int
}

type floorWrite struct {
	user string
	done chan error
}

func (f *floor) write(ctx context.Context, user string) error {
	w := floorWrite{user: user, done: make(chan error, 1)}
	f.mu.Lock()
	f.waiting = append(f.waiting, w)
	run := f.running < 4
	if run {
		f.running++
	}
	f.mu.Unlock()
	if run {
		f.run(context.WithoutCancel(ctx))
	}
	return <-w.done
}

func (f *floor) run(ctx context.Context) {
	for {
		f.mu.Lock()
		n := min(len(f.waiting), 64)
		if n == 0 {
			f.running--
			f.mu.Unlock()
			return
		}
		batch := f.waiting[:n:n]
		f.waiting = f.waiting[n:]
		f.mu.Unlock()
		pipe := f.rdb.Pipeline()
		for _, w := range batch {
			pipe.HSetNX(ctx, f.key, w.user, "1")
		}
		_, err := pipe.Exec(ctx)
		for _, w := range batch {
			w.done <- err
		}
	}
}
