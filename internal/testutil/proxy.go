package testutil

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections from an address of its own to a target,
// and can be taken down and brought back up on the same address: a
// service that is away for a while, as its clients see it, without
// stopping the real one other tests share.
type Proxy struct {
	t      testing.TB
	addr   string
	target string

	mu    sync.Mutex
	ln    net.Listener // nil while down
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to target on a free port of 127.0.0.1, up; it is
// closed when the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	p := &Proxy{t: t, addr: ln.Addr().String(), target: target, conns: map[net.Conn]bool{}}
	p.serve(ln)
	t.Cleanup(func() {
		p.Down()
		p.wg.Wait()
	})
	return p
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.addr }

// Down stops accepting connections and cuts every open one.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// Up accepts connections again, on the same address.
func (p *Proxy) Up() {
	p.t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy up on %s: %v", p.addr, err)
	}
	p.serve(ln)
}

func (p *Proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Go(func() { p.forward(c) })
		}
	})
}

// forward copies between c and a new connection to the target until
// either side ends or the proxy goes down.
func (p *Proxy) forward(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	if !p.track(c, up) {
		return
	}
	defer p.untrack(c, up)
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src) // until either side ends, or the proxy cuts them
		_ = dst.Close()
		_ = src.Close()
	}
	wg.Go(func() { pipe(up, c) })
	wg.Go(func() { pipe(c, up) })
	wg.Wait()
}

// track notes c and up as open, or closes them when the proxy went down
// meanwhile.
func (p *Proxy) track(c, up net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		_ = c.Close()
		_ = up.Close()
		return false
	}
	p.conns[c], p.conns[up] = true, true
	return true
}

func (p *Proxy) untrack(c, up net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
	delete(p.conns, up)
}
