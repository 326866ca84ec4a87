package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/buildinfo"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/httpapi"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/stock"
)

// RunOptions says what a process runs.
type RunOptions struct {
	API     bool // serve HTTP
	Workers bool // drain queues into SQL, expire unpaid orders
	Migrate bool // apply migrations at start
}

// Run serves until ctx is cancelled, then shuts down in order: HTTP (in-flight
// requests finish), the buy path, workers (in-flight batches finish or return
// to the queue); the caller closes Redis and SQL with Close afterwards.
func (a *App) Run(ctx context.Context, opts RunOptions) error {
	cfg := a.Cfg
	// Redis may have lost SKUs (a restart without persistence): rebuild them
	// from SQL before taking orders.
	if err := a.Orders.RebuildMissing(ctx); err != nil {
		return fmt.Errorf("rebuild redis state: %w", err)
	}

	var srv *http.Server
	var seller *stock.Seller
	serveErr := make(chan error, 1)
	if opts.API {
		tokens, err := a.shopperTokens(ctx)
		if err != nil {
			return err
		}
		if tokens != nil {
			defer tokens.Close()
		}
		seller = stock.NewSeller(ctx, a.Redis, a.Stock, a.Locks, stock.SellerOptions{
			Strategy:    cfg.Stock.Strategy,
			LockTTL:     cfg.Stock.LockTTL,
			LockWait:    cfg.Stock.LockWait,
			BatchMax:    cfg.Stock.BatchMax,
			BatchWait:   cfg.Stock.BatchWait,
			OnStateLost: a.Orders.OnStateLost,
			Log:         a.Log,
		})
		orders := a.Orders.WithSeller(seller)
		deps := httpapi.Deps{
			Log:            a.Log,
			HTTP:           cfg.HTTP,
			Registry:       a.Registry,
			Ready:          a.Ready,
			Report:         a.ReadyReport,
			Mode:           a.mode(),
			Version:        buildinfo.Version,
			Shop:           orders,
			Admin:          orders,
			AdminToken:     a.AdminToken,
			TrustedProxies: cfg.RateLimit.TrustedProxies,
		}
		if tokens != nil {
			deps.Tokens = tokens
		}
		ln, err := net.Listen("tcp", cfg.HTTP.Addr)
		if err != nil {
			seller.Close()
			return fmt.Errorf("http: listen on %s: %w", cfg.HTTP.Addr, err)
		}
		srv = httpapi.NewServer(cfg.HTTP, httpapi.New(deps), a.Log)
		a.Log.Info("http listening", "addr", ln.Addr().String(), "mode", a.mode(), "strategy", cfg.Stock.Strategy)
		go func() { serveErr <- srv.Serve(ln) }()
	}

	workCtx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	var workers sync.WaitGroup
	if opts.Workers {
		waker := queue.NewWaker(a.Redis)
		defer func() { _ = waker.Close() }()
		d := a.Orders.Drainer(order.DrainOptions{
			BatchSize:       cfg.Worker.BatchSize,
			Workers:         cfg.Worker.Concurrency,
			Lease:           cfg.Worker.Lease,
			SweepInterval:   cfg.Worker.SweepInterval,
			SKURefresh:      cfg.Worker.SKURefresh,
			RetryBackoffMax: cfg.Worker.RetryBackoffMax,
			Waker:           waker,
			Watch:           func(q *queue.Queue) { a.QueueMetrics.Watch(q) },
			Unwatch:         a.QueueMetrics.Unwatch,
		})
		workers.Go(func() { _ = d.Run(workCtx) })
		a.Log.Info("workers started", "batch_size", cfg.Worker.BatchSize, "concurrency", cfg.Worker.Concurrency)
	}

	var err error
	select {
	case <-ctx.Done():
		a.Log.Info("shutting down", "cause", context.Cause(ctx).Error())
	case err = <-serveErr:
		err = fmt.Errorf("http: %w", err)
	}

	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.HTTP.ShutdownTimeout)
		if e := srv.Shutdown(sctx); e != nil && !errors.Is(e, http.ErrServerClosed) {
			a.Log.Warn("http shutdown", "err", e.Error())
		}
		cancel()
		seller.Close()
		a.Log.Info("http stopped")
	}
	stopWorkers()
	workers.Wait()
	if opts.Workers {
		a.Log.Info("workers stopped")
	}
	return err
}

func (a *App) mode() string {
	if a.Embedded() {
		return "embedded"
	}
	return "external"
}

// shopperTokens returns the JWT verifier in jwt mode, nil in header mode.
func (a *App) shopperTokens(ctx context.Context) (*auth.Verifier, error) {
	mode, err := a.Cfg.ShopperAuth()
	if err != nil || mode != config.AuthJWT {
		return nil, err
	}
	v, err := auth.New(ctx, a.Cfg.Auth, a.Log)
	if err != nil {
		return nil, err
	}
	a.Log.Info("shoppers identified by JWT", "hs256", a.Cfg.Auth.JWTSecret != "",
		"jwks_url", a.Cfg.Auth.JWTJWKSURL, "jwks_file", a.Cfg.Auth.JWTJWKSFile)
	return v, nil
}
