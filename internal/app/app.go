// Package app wires seckill together: it opens Redis and the SQL store from
// the configuration (or their embedded stand-ins), applies migrations, and
// builds the HTTP server and the background workers the CLI commands run.
// Close releases everything in order.
package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/clockcheck"
	"github.com/seckill/seckill/internal/config"
	"github.com/seckill/seckill/internal/drain"
	"github.com/seckill/seckill/internal/order"
	"github.com/seckill/seckill/internal/outbox"
	"github.com/seckill/seckill/internal/pace"
	"github.com/seckill/seckill/internal/queue"
	"github.com/seckill/seckill/internal/ratelimit"
	"github.com/seckill/seckill/internal/replica"
	"github.com/seckill/seckill/internal/room"
	"github.com/seckill/seckill/internal/sale"
	"github.com/seckill/seckill/internal/stock"
	"github.com/seckill/seckill/internal/stripepay"
	"github.com/seckill/seckill/lock"
	"github.com/seckill/seckill/lock/lockmetrics"
	"github.com/seckill/seckill/migrations"
)

// App holds the process's connections and services.
type App struct {
	Cfg     *config.Config
	Log     *slog.Logger
	Redis   redis.UniversalClient
	DB      *gorm.DB
	Dialect string // migrations.MySQL or migrations.SQLite

	// AdminToken is the configured token or, when the API serves in
	// embedded mode with none configured, one generated as it starts.
	AdminToken string

	Registry     *prometheus.Registry
	Catalog      *catalog.Store
	Stock        *stock.Store
	Locks        *lock.Client
	Sales        *sale.Service
	Orders       *order.Store // the orders table and its events
	Rooms        *room.Room   // the waiting rooms of the SKUs with one
	Pace         *pace.Pace   // orders persisted per second, every instance
	QueueMetrics *queue.Metrics

	cache        *catalog.Cache
	closer       *order.Closer
	events       *outbox.Dispatcher // nil when events are off
	orderMetrics *order.Metrics
	drainMetrics *drain.Metrics
	perAddress   order.Limiter
	clock        *clockcheck.Checker // this instance's clock against Redis's
	stripe       *stripepay.Client   // payment.mode stripe; nil otherwise

	closers []func()
}

// Embedded reports whether either backend is the in-process stand-in.
func (a *App) Embedded() bool { return a.Cfg.EmbeddedRedis() || a.Cfg.EmbeddedSQL() }

// Open connects to Redis and the SQL store, waiting for them as configured,
// and applies migrations when migrate is true. What only serving or the
// workers need (the admin token, the event receivers) is set up by Run.
func Open(ctx context.Context, cfg *config.Config, log *slog.Logger, migrate bool) (*App, error) {
	a := &App{Cfg: cfg, Log: log, AdminToken: cfg.Admin.Token}
	ok := false
	defer func() {
		if !ok {
			a.Close()
		}
	}()

	rdb, closeRedis, err := openRedis(ctx, cfg.Redis, log)
	if err != nil {
		return nil, err
	}
	a.Redis = rdb
	a.closers = append(a.closers, closeRedis)

	db, dialect, err := openSQL(ctx, cfg.MySQL, cfg.Embedded, log)
	if err != nil {
		return nil, err
	}
	a.DB, a.Dialect = db, dialect
	a.closers = append(a.closers, func() { closeSQL(db) })

	if migrate || dialect == migrations.SQLite {
		if err := a.Migrate(ctx); err != nil {
			return nil, err
		}
	}

	if err := a.build(); err != nil {
		return nil, err
	}
	ok = true
	return a, nil
}

// MigrateSQL opens the SQL store alone, applies its pending migrations and
// closes it: all seckill migrate needs, no Redis. It returns the dialect.
func MigrateSQL(ctx context.Context, cfg *config.Config, log *slog.Logger) (string, error) {
	db, dialect, err := openSQL(ctx, cfg.MySQL, cfg.Embedded, log)
	if err != nil {
		return "", err
	}
	defer closeSQL(db)
	a := &App{Cfg: cfg, Log: log, DB: db, Dialect: dialect}
	return dialect, a.Migrate(ctx)
}

func closeSQL(db *gorm.DB) {
	if sqlDB, err := db.DB(); err == nil {
		_ = sqlDB.Close()
	}
}

// build creates the services on the open connections.
func (a *App) build() error {
	cfg := a.Cfg
	a.Registry = prometheus.NewRegistry()
	a.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	lockMetrics := lockmetrics.New("seckill")
	a.QueueMetrics = queue.NewMetrics("seckill")
	a.Registry.MustRegister(lockMetrics, a.QueueMetrics)

	a.Catalog = catalog.NewStore(a.DB, nil)
	var perUser stock.Rate
	if rl := cfg.RateLimit; rl.Enabled {
		// The shopper's budget is kept by the buy script (no round trip of
		// its own); the address's, when set, by redis_rate.
		perUser = stock.Rate{PerSecond: rl.PerUser, Burst: rl.PerUserBurst}
		if rl.PerIP > 0 {
			a.perAddress = ratelimit.New(a.Redis, cfg.Redis.KeyPrefix+"rl:", rl.PerIP, rl.PerIPBurst)
		}
	}
	// With redis.wait_replicas, a buy's 202 and a drained order's insert
	// wait until the write is on enough replicas to survive a failover.
	replicas := replica.New(a.Redis, cfg.Redis.WaitReplicas, cfg.Redis.WaitTimeout)
	a.Stock = stock.NewStore(a.Redis, stock.StoreOptions{
		Prefix:      cfg.Redis.KeyPrefix,
		MaxAttempts: cfg.Order.MaxAttempts,
		Queue:       queue.Options{Metrics: a.QueueMetrics, Logger: a.Log, Replicas: replicas},
		PerUser:     perUser,
		Replicas:    replicas,
	})
	a.Locks = lock.New(a.Redis, lock.WithPrefix(cfg.Redis.KeyPrefix+"lock:"), lock.WithObserver(lockMetrics))
	a.closers = append(a.closers, func() { _ = a.Locks.Close() })
	a.cache = catalog.NewCache(a.Catalog, 2*time.Second)
	a.Pace = pace.New(a.Redis, cfg.Redis.KeyPrefix, nil)
	if err := a.buildRooms(replicas); err != nil {
		return err
	}
	a.Orders = order.NewStore(a.DB, outbox.NewWriter(cfg.Events.On()))
	a.Sales = sale.NewService(a.DB, a.Catalog, a.cache, a.Stock, a.Locks, sale.Options{
		PaymentTimeout: cfg.Order.PaymentTimeout,
		Log:            a.Log,
		Rooms:          a.Rooms,
		Orders:         a.Orders,
	})
	a.orderMetrics = order.NewMetrics(a.Registry)
	a.drainMetrics = drain.NewMetrics(a.Registry)
	// In stripe mode the closer cancels the PaymentIntent of an order that
	// closes unpaid and refunds a paid one support staff cancel, and the
	// checkout opens each order's.
	co := order.CloserOptions{Metrics: a.orderMetrics, Log: a.Log}
	if cfg.Payment.Mode == config.PaymentStripe {
		a.stripe = stripepay.New(stripepay.Options{SecretKey: cfg.Payment.Stripe.SecretKey,
			WebhookSecrets: cfg.Payment.Stripe.WebhookSecrets(), APIBase: cfg.Payment.Stripe.APIBase})
		co.Gateway = a.stripe
	}
	a.closer = order.NewCloser(a.Orders, a.Stock, a.cache, co)
	a.clock = clockcheck.New(a.Redis, cfg.Redis.KeyPrefix, a.Registry, clockcheck.Options{Log: a.Log})
	return nil
}

// Migrate applies pending migrations.
func (a *App) Migrate(ctx context.Context) error {
	sqlDB, err := a.DB.DB()
	if err != nil {
		return err
	}
	applied, err := migrations.Up(ctx, sqlDB, a.Dialect)
	if errors.Is(err, migrations.ErrChecksOff) || errors.Is(err, migrations.ErrAutoIDCache) {
		return &config.Error{Key: "mysql.dsn", Allowed: "names a TiDB database where " + err.Error()}
	}
	if err != nil {
		return err
	}
	if len(applied) > 0 {
		a.Log.Info("migrations applied", "dialect", a.Dialect, "versions", applied)
	}
	return nil
}

// Ready reports whether Redis (every primary) and SQL answer and the schema
// is current.
func (a *App) Ready(ctx context.Context) error {
	var errs []error
	if err := pingPrimaries(ctx, a.Redis); err != nil {
		errs = append(errs, fmt.Errorf("redis: %w", err))
	}
	sqlDB, err := a.DB.DB()
	if err == nil {
		err = sqlDB.PingContext(ctx)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("sql: %w", err))
	} else if n, err := migrations.Pending(ctx, sqlDB, a.Dialect); err != nil {
		errs = append(errs, err)
	} else if n > 0 {
		errs = append(errs, fmt.Errorf("sql: %d migration(s) pending", n))
	}
	return errors.Join(errs...)
}

// Close releases the connections in the order they were opened: Redis, then
// SQL. Stop the HTTP server and the workers first.
func (a *App) Close() {
	for _, c := range a.closers {
		c()
	}
	a.closers = nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
