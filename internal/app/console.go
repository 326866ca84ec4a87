package app

import (
	"net"

	"github.com/seckill/seckill/internal/console"
	"github.com/seckill/seckill/internal/outbox"
)

// console returns the admin console on the sales, and on the outbox's
// receivers when events are on; nil when the admin API is off (no admin
// token): the console is off with it.
func (a *App) console() (*console.Console, error) {
	if a.AdminToken == "" {
		return nil, nil
	}
	// A live feed's frame has as long as an answer to be written.
	o := console.Options{Token: a.AdminToken, WriteTimeout: a.Cfg.HTTP.WriteTimeout, Log: a.Log}
	if a.Cfg.Events.On() {
		o.Receivers = outbox.Admin{DB: a.DB}
	}
	return console.New(a.Sales, o)
}

// logConsole says where the console of a server listening on addr is.
func (a *App) logConsole(addr net.Addr) {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	a.Log.Info("admin console: log in with the admin token", "url", "http://"+net.JoinHostPort(host, port)+"/console")
}
