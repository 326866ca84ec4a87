package stock

import (
	"context"
	"fmt"
	"sync"
	"time"
)

type pending struct {
	req   Request
	reply chan reply
}

type reply struct {
	res Result
	err error
}

// line combines the concurrent requests for one SKU in this process into
// batches: while one batch runs, the next gathers. A line with nothing to do
// for LineIdle stops and leaves the map, so a process that serves sale after
// sale keeps no goroutine of a finished one.
type line struct {
	buckets int // of the SKU the line's part belongs to
	ch      chan *pending
	mu      sync.RWMutex // senders share it; closing takes it alone
	shut    bool
	stop    chan struct{} // closed when the line stops
}

// enqueue hands p to the line of part, starting one if needed.
func (s *Seller) enqueue(ctx context.Context, part Part, buckets int, p *pending) error {
	for {
		l := s.line(part, buckets)
		l.mu.RLock()
		if l.shut {
			// It stopped after we found it; the next call finds a new one.
			l.mu.RUnlock()
			continue
		}
		var err error
		select {
		case l.ch <- p:
		case <-ctx.Done():
			err = fmt.Errorf("%w: %w", ErrBusy, ctx.Err())
		case <-s.done:
			err = ErrClosed
		}
		l.mu.RUnlock()
		return err
	}
}

func (s *Seller) line(p Part, buckets int) *line {
	if l, ok := s.lines.Load(p); ok {
		return l.(*line)
	}
	l := &line{ch: make(chan *pending, 4*s.o.BatchMax), stop: make(chan struct{}), buckets: buckets}
	actual, loaded := s.lines.LoadOrStore(p, l)
	if loaded {
		return actual.(*line)
	}
	workers := 1
	if s.o.Strategy == StrategyAtomic {
		// Without a lock several scripts may be in flight to hide the round trip.
		workers = 4
	}
	for range workers {
		s.wg.Go(func() { s.runLine(p, l) })
	}
	return l
}

// idle stops l if no request is waiting on it: no sender is inside
// enqueue (they hold the read lock), so none can send after it is shut.
func (s *Seller) idle(p Part, l *line) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shut {
		return true
	}
	if len(l.ch) > 0 {
		return false
	}
	l.shut = true
	s.lines.CompareAndDelete(p, l)
	close(l.stop)
	return true
}

func (s *Seller) runLine(p Part, l *line) {
	batch := make([]*pending, 0, s.o.BatchMax)
	reqs := make([]Request, 0, s.o.BatchMax)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var held *lease
	if s.o.Strategy == StrategyLock && s.o.LockHold > 0 {
		held = &lease{}
		defer held.release()
	}
	idle := time.NewTimer(s.o.LineIdle)
	defer idle.Stop()
	crowded := false
	for {
		batch = batch[:0]
		idle.Reset(s.o.LineIdle)
		select {
		case q := <-l.ch:
			batch = append(batch, q)
		case <-s.done:
			s.fail(l, ErrClosed)
			return
		case <-l.stop:
			return
		case <-idle.C:
			if s.idle(p, l) {
				return
			}
			continue
		}
	fill:
		for len(batch) < s.o.BatchMax {
			select {
			case q := <-l.ch:
				batch = append(batch, q)
			default:
				break fill
			}
		}
		if s.SoldOut(p.SKU) {
			// Sold out since these were queued (a crowd's first batch
			// found the end): answered as Buy answers at its start, with
			// no Redis call. A kept lock goes back at once: other instances
			// need it to learn the end for themselves.
			held.release()
			for _, q := range batch {
				q.reply <- reply{err: ErrSoldOut}
			}
			continue
		}
		// Wait for more only while requests arrive together: a lone request
		// goes at once.
		if crowded && len(batch) < s.o.BatchMax && s.o.BatchWait > 0 {
			timer.Reset(s.o.BatchWait)
		wait:
			for len(batch) < s.o.BatchMax {
				select {
				case q := <-l.ch:
					batch = append(batch, q)
				case <-timer.C:
					break wait
				}
			}
			timer.Stop()
		}
		crowded = len(batch) > 1
		reqs = reqs[:0]
		for _, q := range batch {
			reqs = append(reqs, q.req)
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.o.LockWait+5*time.Second)
		res, err := s.execute(ctx, p, l.buckets, reqs, held)
		cancel()
		for i, q := range batch {
			if err != nil {
				q.reply <- reply{err: forRequest(err, i)}
			} else {
				q.reply <- reply{res: res[i]}
			}
		}
		if held != nil && held.m != nil && (len(l.ch) == 0 || time.Since(held.since) >= s.o.LockHold) {
			// Nothing waiting here, or this instance has had its turn.
			held.release()
		}
	}
}

// fail answers every request still queued on l.
func (s *Seller) fail(l *line, err error) {
	for {
		select {
		case p := <-l.ch:
			p.reply <- reply{err: err}
		default:
			return
		}
	}
}
