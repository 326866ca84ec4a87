package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/seckill/seckill/internal/auth"
	"github.com/seckill/seckill/internal/buildinfo"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/drain"
	"github.com/seckill/seckill/internal/httpapi"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/webhook"
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
	// Redis may have lost SKUs (a restart without persistence): rebuild them
	// from SQL before taking orders.
	if err := a.Sales.RebuildMissing(ctx); err != nil {
		return fmt.Errorf("rebuild redis state: %w", err)
	}
	// Every process reads its clock for the sale window, the rate budgets
	// and the waiting rooms: its offset from Redis's is watched.
	clockCtx, stopClock := context.WithCancel(context.Background())
	var clockDone sync.WaitGroup
	clockDone.Go(func() { a.clock.Run(clockCtx) })
	defer func() {
		stopClock()
		clockDone.Wait()
	}()
	serveErr := make(chan error, 1)
	stopAPI := func() {}
	if opts.API {
		var err error
		if stopAPI, err = a.startAPI(ctx, serveErr); err != nil {
			return err
		}
	}
	stopWorkers := func() {}
	if opts.Workers {
		var err error
		if stopWorkers, err = a.startWorkers(); err != nil {
			stopAPI()
			return err
		}
	}

	var err error
	select {
	case <-ctx.Done():
		a.Log.Info("shutting down", "cause", context.Cause(ctx).Error())
	case err = <-serveErr:
		err = fmt.Errorf("http: %w", err)
	}
	stopAPI()
	stopWorkers()
	return err
}

// startAPI serves the HTTP API; a serving error goes to serveErr. The stop
// function lets in-flight requests finish (up to the shutdown timeout), then
// stops the buy path.
func (a *App) startAPI(ctx context.Context, serveErr chan<- error) (stop func(), err error) {
	cfg := a.Cfg
	payMode, err := cfg.PaymentConfirmation()
	if err != nil {
		return nil, err
	}
	var hooks httpapi.WebhookVerifier
	if payMode == config.PaymentWebhook {
		if hooks, err = webhook.NewVerifier(cfg.Payment.Secrets()); err != nil {
			return nil, err
		}
	}
	aliNotes, wxNotes, err := providerVerifiers(cfg.Payment)
	if err != nil {
		return nil, err
	}
	a.warnAPI()
	con, err := a.console()
	if err != nil {
		return nil, err
	}
	tokens, err := a.shopperTokens(ctx)
	if err != nil {
		return nil, err
	}
	seller := stock.NewSeller(ctx, a.Redis, a.Stock, a.Locks, stock.SellerOptions{
		Strategy:    cfg.Stock.Strategy,
		LockTTL:     cfg.Stock.LockTTL,
		LockWait:    cfg.Stock.LockWait,
		BatchMax:    cfg.Stock.BatchMax,
		BatchWait:   cfg.Stock.BatchWait,
		OnStateLost: a.Sales.OnStateLost,
		Log:         a.Log,
	})
	orders := order.NewService(a.DB, a.Catalog, a.cache, a.Stock, seller, a.closer, order.Options{
		PaymentTimeout: cfg.Order.PaymentTimeout,
		Currency:       cfg.Payment.Currency,
		PerAddress:     a.perAddress,
		Log:            a.Log,
		Metrics:        a.orderMetrics,
		Passes:         a.Rooms,
	})
	// Shoppers waiting in a room are answered from this process's copy of
	// it, which a tick per visited room keeps fresh.
	board := room.NewBoard(a.Rooms, room.BoardOptions{Log: a.Log})
	// The room streams end when the shutdown starts, so that they do not
	// hold it up.
	closing, endStreams := context.WithCancel(context.Background())
	deps := httpapi.Deps{
		Log:            a.Log,
		HTTP:           cfg.HTTP,
		Registry:       a.Registry,
		Ready:          a.Ready,
		Report:         a.ReadyReport,
		Mode:           a.mode(),
		Version:        buildinfo.Version,
		Shop:           orders,
		Sales:          a.Sales,
		Rooms:          board,
		RoomStreams:    roomStreams{board},
		MaxRoomStreams: cfg.Room.Streams,
		Closing:        closing,
		Admin:          a.Sales,
		Drops:          a.Sales,
		Support:        orders,
		Payments:       orders,
		Events:         outbox.Admin{DB: a.DB},
		PaymentMode:    payMode,
		Webhooks:       hooks,
		Alipay:         aliNotes,
		WeChatPay:      wxNotes,
		AdminToken:     a.AdminToken,
		TrustedProxies: cfg.RateLimit.TrustedProxies,
	}
	if tokens != nil {
		deps.Tokens = tokens
	}
	if a.stripe != nil {
		deps.Stripe = a.stripe
	}
	if con != nil {
		deps.Console = con
	}
	closeAll := func() {
		endStreams()
		board.Close()
		seller.Close()
		if tokens != nil {
			tokens.Close()
		}
		if con != nil {
			con.Close()
		}
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("http: listen on %s: %w", cfg.HTTP.Addr, err)
	}
	srv := httpapi.NewServer(cfg.HTTP, httpapi.New(deps), a.Log)
	srv.RegisterOnShutdown(endStreams)
	a.Log.Info("http listening", "addr", ln.Addr().String(), "mode", a.mode(), "strategy", cfg.Stock.Strategy)
	a.warnListen(ln.Addr(), payMode)
	if con != nil {
		// Its live feeds end when the shutdown starts, so that they do
		// not hold it up.
		srv.RegisterOnShutdown(con.Close)
		a.logConsole(ln.Addr())
	}
	go func() { serveErr <- srv.Serve(ln) }()
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.HTTP.ShutdownTimeout)
		defer cancel()
		if e := srv.Shutdown(sctx); e != nil && !errors.Is(e, http.ErrServerClosed) {
			a.Log.Warn("http shutdown", "err", e.Error())
		}
		closeAll()
		a.Log.Info("http stopped")
	}, nil
}

// warnAPI sets up and says at start what concerns the API alone: the admin
// token it generates in embedded mode, or the admin API off without one;
// the waiting room passes signed with a key of this process only.
func (a *App) warnAPI() {
	switch {
	case a.AdminToken == "" && a.Embedded():
		a.AdminToken = randomToken()
		a.Log.Warn("EMBEDDED MODE: admin API enabled with a generated token", "admin_token", a.AdminToken)
	case a.AdminToken == "":
		// An operator would otherwise learn it only from a 403.
		a.Log.Warn("admin API off: admin.token (SECKILL_ADMIN_TOKEN) is empty, so every /admin call answers 403 admin_disabled",
			"key", "admin.token", "env", "SECKILL_ADMIN_TOKEN")
	}
	if len(a.Cfg.Room.Keys()) == 0 && !a.Embedded() {
		a.Log.Warn("room.pass_keys is not set: waiting room passes are signed with a key of this process, which other instances refuse; set the same keys on every instance")
	}
}

// warnListen says where a fully embedded server (the quick start) listens:
// unless told otherwise it trusts a header for the shopper's identity and
// the shopper for payments, which suits this host only.
func (a *App) warnListen(addr net.Addr, payMode string) {
	if a.Cfg.External() {
		return
	}
	if ta, ok := addr.(*net.TCPAddr); ok && ta.IP.IsLoopback() {
		a.Log.Warn("EMBEDDED MODE: listening on this host only; set http.addr (SECKILL_HTTP_ADDR), e.g. :8080, to serve other hosts",
			"addr", addr.String())
		return
	}
	var trusts []string
	if auth, _ := a.Cfg.ShopperAuth(); auth == config.AuthHeader {
		trusts = append(trusts, "act as any shopper (X-User-ID)")
	}
	if payMode == config.PaymentTrusted {
		trusts = append(trusts, "mark orders paid without paying (payment.mode trusted)")
	}
	msg := "EMBEDDED MODE: listening beyond this host, as http.addr says"
	if len(trusts) > 0 {
		msg += ": whoever reaches it can " + strings.Join(trusts, " and ")
	}
	a.Log.Warn(msg, "addr", addr.String())
}

// startWorkers drains the queues into SQL, runs the payment deadlines and,
// with events on, delivers the order events. The stop function lets
// in-flight batches finish or hands them back.
func (a *App) startWorkers() (stop func(), err error) {
	cfg := a.Cfg
	if err := a.buildEvents(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	waker := queue.NewWaker(a.Redis)
	d := drain.New(a.Orders, a.Catalog, a.Stock, a.closer, a.Sales, drain.Options{
		BatchSize:       cfg.Worker.BatchSize,
		Workers:         cfg.Worker.Concurrency,
		Lease:           cfg.Worker.Lease,
		SweepInterval:   cfg.Worker.SweepInterval,
		SKURefresh:      cfg.Worker.SKURefresh,
		RetryBackoffMax: cfg.Worker.RetryBackoffMax,
		Waker:           waker,
		Watch:           func(q *queue.Queue) { a.QueueMetrics.Watch(q) },
		Unwatch:         a.QueueMetrics.Unwatch,
		PaymentTimeout:  cfg.Order.PaymentTimeout,
		Log:             a.Log,
		Metrics:         a.drainMetrics,
		Pace:            a.Pace,
	})
	var wg sync.WaitGroup
	wg.Go(func() { _ = d.Run(ctx) })
	wg.Go(func() { a.Pace.Run(ctx) })
	a.Log.Info("workers started", "batch_size", cfg.Worker.BatchSize, "concurrency", cfg.Worker.Concurrency)
	if a.events != nil {
		wg.Go(func() { _ = a.events.Run(ctx) })
		a.Log.Info("events dispatcher started", "webhooks", len(cfg.Events.WebhookURLs()), "nats", cfg.Events.NATSURL != "")
	}
	return func() {
		cancel()
		wg.Wait()
		_ = waker.Close()
		a.Log.Info("workers stopped")
	}, nil
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
