package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/seckill/seckill/internal/buildinfo"
	"github.com/seckill/seckill/internal/httpapi"
)

// RunOptions says what a process runs.
type RunOptions struct {
	API     bool // serve HTTP
	Workers bool // drain queues into SQL, expire unpaid orders
	Migrate bool // apply migrations at start
}

// Run serves until ctx is cancelled, then shuts down in order: HTTP (in-flight
// requests finish), workers (in-flight batches finish or return to the
// queue); the caller closes Redis and SQL with Close afterwards.
func (a *App) Run(ctx context.Context, opts RunOptions) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	var srv *http.Server
	var serveErr = make(chan error, 1)
	if opts.API {
		h := httpapi.New(httpapi.Deps{
			Log:      a.Log,
			HTTP:     a.Cfg.HTTP,
			Registry: reg,
			Ready:    a.Ready,
			Mode:     a.mode(),
			Version:  buildinfo.Version,
		})
		ln, err := net.Listen("tcp", a.Cfg.HTTP.Addr)
		if err != nil {
			return fmt.Errorf("http: listen on %s: %w", a.Cfg.HTTP.Addr, err)
		}
		srv = httpapi.NewServer(a.Cfg.HTTP, h, a.Log)
		a.Log.Info("http listening", "addr", ln.Addr().String(), "mode", a.mode())
		go func() { serveErr <- srv.Serve(ln) }()
	}

	workCtx, stopWorkers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWorkers()
	var workers sync.WaitGroup
	if opts.Workers {
		a.startWorkers(workCtx, &workers, reg)
	}

	var err error
	select {
	case <-ctx.Done():
		a.Log.Info("shutting down", "cause", context.Cause(ctx).Error())
	case err = <-serveErr:
		err = fmt.Errorf("http: %w", err)
	}

	if srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), a.Cfg.HTTP.ShutdownTimeout)
		if e := srv.Shutdown(sctx); e != nil && !errors.Is(e, http.ErrServerClosed) {
			a.Log.Warn("http shutdown", "err", e.Error())
		}
		cancel()
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

// startWorkers starts the background workers under wg; they stop when ctx is
// cancelled.
func (a *App) startWorkers(ctx context.Context, wg *sync.WaitGroup, reg prometheus.Registerer) {
	_ = reg
	wg.Go(func() { <-ctx.Done() })
}
