package room

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill/seckill/internal/catalog"
)

// Board answers shoppers' joins and looks from this process's memory when
// it can, so that a crowd polling a room costs no more than a crowd told
// `sold_out`: a copy of each visited room's standing (its cursor, the
// units left, whether its line is final), refreshed by a tick that also
// admits the tickets whose turn has come; and the tickets and places of
// the shoppers it has seen. A place in the line never changes once the
// line is final (fifo, or the pre-queue drawn), so a waiting shopper's
// answer — waiting, how many ahead, or sold out — follows from the two.
//
// Everything that writes, and every ticket at or past its turn (admitted,
// its pass spent or expired), goes to Redis as Room answers it. The copy is
// used for at most MaxAge after it was read, and only while it names the
// room state the shopper's ticket was read from (the epoch): a room whose
// state was lost and made again, or a Redis that stopped answering, sends
// every visit to Redis. An answer from the board is at most MaxAge stale:
// a ticket admitted since is told to wait, and looks again at Retry-After.
type Board struct {
	room *Room
	o    BoardOptions

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu    sync.Mutex
	rooms map[uint64]*standing // rooms visited lately, each with its tick
	// places are the tickets of the shoppers seen, by SKU and shopper.
	places *places
}

// BoardOptions configure a Board.
type BoardOptions struct {
	// Tick is how often a visited room is read and admits (default 100ms).
	Tick time.Duration
	// MaxAge is how old a room's copy may be to answer from (default 1s).
	MaxAge time.Duration
	// Idle stops the tick of a room nobody visited on this process for so
	// long (default 30s).
	Idle time.Duration
	// Places bounds the tickets remembered (default 200,000: about 20 MB,
	// which the garbage collector does not scan).
	Places int
	Log    *slog.Logger

	// manual: no tick goroutines; tests call refresh themselves.
	manual bool
}

// standing is what a process knows of one room.
type standing struct {
	copy    atomic.Pointer[roomCopy]
	visited atomic.Int64 // Unix ns of the last visit
	joins   joinLine
	// admits measures the room's admission rate; its tick's alone.
	admits admissions
	news   news // for the room's followers (stream.go)
}

// roomCopy is a room's standing as its tick last read it.
type roomCopy struct {
	at           time.Time
	cursor, left int64
	prio         int64 // priority tickets waiting, ahead of the line
	epoch        [ticketLen]byte
	final        bool
	startsAt     time.Time // the SKU's start, as the tick saw it
	rate         float64
	admits       measure // the admission rate measured up to at
	state        string  // the controls' state
}

// NewBoard returns a board of r's rooms. Close stops its ticks.
func NewBoard(r *Room, o BoardOptions) *Board {
	if o.Tick <= 0 {
		o.Tick = 100 * time.Millisecond
	}
	if o.MaxAge <= 0 {
		o.MaxAge = time.Second
	}
	if o.Idle <= 0 {
		o.Idle = 30 * time.Second
	}
	if o.Places <= 0 {
		o.Places = 200_000
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Board{room: r, o: o, ctx: ctx, cancel: cancel, rooms: map[uint64]*standing{}, places: newPlaces(o.Places)}
}

// Close stops every tick and waits for them.
func (b *Board) Close() {
	b.cancel()
	b.wg.Wait()
}

// Join gives user a ticket in the room of the SKU with id sku (the one
// they have, if any) and answers their place, as Room.Join does.
func (b *Board) Join(ctx context.Context, sku uint64, user string) (Status, error) {
	return b.visit(ctx, sku, user, "join", "")
}

// JoinWithProof is Room.JoinWithProof: the proof is checked before the
// join is answered from memory or combined with others, so that a join
// without a valid one is answered only a ticket the shopper holds.
func (b *Board) JoinWithProof(ctx context.Context, sku uint64, user, proof string) (Status, error) {
	return b.visit(ctx, sku, user, "join", proof)
}

// Challenge is Room.Challenge.
func (b *Board) Challenge(ctx context.Context, sku uint64, user string) (Challenge, error) {
	return b.room.Challenge(ctx, sku, user)
}

// Peek answers user's place without joining, as Room.Peek does.
func (b *Board) Peek(ctx context.Context, sku uint64, user string) (Status, error) {
	return b.visit(ctx, sku, user, "peek", "")
}

// Control is Room.Control.
func (b *Board) Control(ctx context.Context, sku uint64, c Command) (Controls, error) {
	return b.room.Control(ctx, sku, c)
}

// Controls is Room.Controls.
func (b *Board) Controls(ctx context.Context, sku uint64) (Controls, error) {
	return b.room.Controls(ctx, sku)
}

// Published is Room.Published.
func (b *Board) Published(ctx context.Context, sku uint64) ([]byte, error) {
	return b.room.Published(ctx, sku)
}

func (b *Board) visit(ctx context.Context, id uint64, user, op, proof string) (Status, error) {
	sku, now, closed, err := b.room.open(ctx, id)
	if err != nil {
		return Status{}, err
	}
	if closed != nil {
		return *closed, nil
	}
	v, err := b.room.visitor(sku, user, op, proof)
	if err != nil {
		return Status{}, err
	}
	s := b.standing(sku.ID, now)
	key := b.places.key(sku.ID, user)
	if p, ok := b.places.get(key); ok {
		if st, ok := b.fromCopy(sku, s.copy.Load(), p, now); ok {
			return st, nil
		}
	}
	var rep *reply
	var one shopperReply
	if op == "join" {
		rep, one, err = s.joins.join(ctx, v, func(ctx context.Context, users []visitor) (*reply, error) {
			return b.room.script(ctx, sku, users, "join", b.room.o.Now())
		})
	} else {
		rep, err = b.room.script(ctx, sku, []visitor{v}, op, now)
		if err == nil {
			one = rep.shoppers[0]
		}
	}
	if err != nil {
		return Status{}, err
	}
	if err := v.refused(one); err != nil {
		if rep.state == Closed {
			return noTicket(rep)
		}
		return Status{}, err
	}
	b.remember(key, sku, rep, one)
	var m measure // the copy's, if it is of this room state and fresh
	if c := s.copy.Load(); c != nil {
		if epoch, ok := fixed(rep.epoch); ok && c.epoch == epoch && rep.now.Sub(c.at) <= b.o.MaxAge {
			m = c.admits
		}
	}
	return b.room.answer(sku, user, rep, one, m), nil
}

// remember keeps the place s, of rep, gives a shopper's ticket when it can
// no longer change: a final place, or the pre-queue before the start (a
// look after the start reads the drawn place from Redis once).
func (b *Board) remember(key placeKey, sku *catalog.SKU, rep *reply, s shopperReply) {
	ticket, ok1 := fixed(s.ticket)
	epoch, ok2 := fixed(rep.epoch)
	if !ok1 || !ok2 {
		return
	}
	p := place{ticket: ticket, place: s.place, epoch: epoch, closed: closedBy(s.status)}
	switch {
	case s.priority:
		// A priority ticket's place is in its own line, which the copy
		// does not follow: it is read from Redis (there are few).
		return
	case p.closed != open:
	case s.status == Admitted:
		// Its pass is read from Redis until it is used or expires.
	case rep.final && s.place > 0:
	case s.place == 0 && rep.now.Before(sku.StartsAt):
	default:
		return
	}
	b.places.add(key, p)
}

// fromCopy answers a shopper's ticket p from the room's copy c, if it can:
// a ticket waiting for its turn, in a copy fresh enough and of the same
// room state.
func (b *Board) fromCopy(sku *catalog.SKU, c *roomCopy, p place, now time.Time) (Status, bool) {
	if c == nil || c.epoch != p.epoch || now.Sub(c.at) > b.o.MaxAge || c.at.Sub(now) > b.o.MaxAge ||
		!c.startsAt.Equal(sku.StartsAt) {
		return Status{}, false
	}
	st := Status{Status: Waiting, Ticket: string(p.ticket[:])}
	if p.closed == open && c.state == Closed && (p.place == 0 && now.Before(sku.StartsAt) ||
		p.place > 0 && c.final && p.place-1 >= c.cursor) {
		// The room closed, and its waiting tickets with it; an admitted
		// one keeps its pass, and is answered from Redis.
		p.closed = roomClosedForGood
	}
	if now.Before(sku.StartsAt) && p.closed == open {
		if p.place > 0 {
			// fifo: a place from the start, nobody admitted before it.
			st.Position, st.Ahead = p.place, p.place-1-c.cursor+c.prio
		}
		st.RetryAfterMS = b.room.retryAfter(sku, st, now, c.rate, c.state)
		st.ETAMS, st.ETABasis = estimate(sku, st, now, c.rate, c.admits, c.state)
		return st, true
	}
	if p.closed != open {
		st.Status, st.Reason, st.Position = Closed, closedReasons[p.closed], p.place
		st.RetryAfterMS = max(sku.EndsAt.Sub(now).Milliseconds(), 0)
		return st, true
	}
	if p.place == 0 || !c.final || p.place-1 < c.cursor {
		return Status{}, false
	}
	st.Position, st.Ahead = p.place, p.place-1-c.cursor+c.prio
	if c.left == 0 {
		st.Status, st.RetryAfterMS = SoldOut, soldOutRetry
		return st, true
	}
	st.RetryAfterMS = b.room.retryAfter(sku, st, now, c.rate, c.state)
	st.ETAMS, st.ETABasis = estimate(sku, st, now, c.rate, c.admits, c.state)
	return st, true
}

// standing returns what the process knows of the room of sku, starting its
// tick if it has none.
func (b *Board) standing(sku uint64, now time.Time) *standing {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.rooms[sku]
	if !ok {
		if b.ctx.Err() != nil {
			// Closed: no tick, every visit goes to Redis.
			s = &standing{}
			s.visited.Store(now.UnixNano())
			return s
		}
		s = &standing{}
		b.rooms[sku] = s
		if !b.o.manual {
			b.wg.Go(func() { b.tick(sku, s) })
		}
	}
	s.visited.Store(now.UnixNano())
	return s
}

// tick keeps the copy of the room of sku fresh, admitting as it reads,
// until nobody has visited it for Idle or the sale is over.
func (b *Board) tick(id uint64, s *standing) {
	t := time.NewTicker(b.o.Tick)
	defer t.Stop()
	for {
		if !b.refresh(id, s) {
			return
		}
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refresh reads the room of sku once; false when its tick should stop
// (the room forgotten by the board).
func (b *Board) refresh(id uint64, s *standing) bool {
	now := b.room.o.Now()
	sku, err := b.room.roomSKU(b.ctx, id)
	if err == nil && sku.Room.On() && now.Before(sku.EndsAt) &&
		now.Sub(time.Unix(0, s.visited.Load())) < b.o.Idle {
		// Long enough for the draw of a large pre-queue, which the first
		// tick after the start makes; meanwhile the copy ages and visits
		// go to Redis.
		ctx, cancel := context.WithTimeout(b.ctx, drawTimeout)
		rep, err := b.room.script(ctx, sku, nil, "tick", now)
		cancel()
		if err == nil {
			epoch, _ := fixed(rep.epoch) // none before the first ticket: no place matches it
			s.keep(&roomCopy{at: rep.now, cursor: rep.cursor, left: rep.left, prio: rep.prio, epoch: epoch,
				final: rep.final, startsAt: sku.StartsAt, rate: rep.rate, state: rep.state,
				admits: s.admits.add(rep.now, rep.cursor, measured(rep), epoch)})
			return true
		}
		s.keep(nil) // visits go to Redis, and meet its error there
		if b.ctx.Err() == nil {
			b.o.Log.Debug("room tick", "sku", id, "err", err.Error())
			return true
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rooms[id] == s {
		delete(b.rooms, id)
	}
	s.stopped()
	return false
}

// maxJoins is the most joins one room script call issues.
const maxJoins = 64

// maxJoinCalls is the most script calls of one room's joins a process has
// in flight at once: while one batch is in Redis the next is on its way,
// so that a process's joins are not bound by one round trip at a time.
const maxJoinCalls = 4

// joinLine combines the concurrent joins of one room in this process into
// script calls, as a group commit does: a join that finds fewer than
// maxJoinCalls calls running runs one for every join waiting (up to
// maxJoins), then hands its turn to the first join still waiting that has
// none, if any; the others wait for their answer. Each ticket is in Redis
// before its join is answered, as alone.
type joinLine struct {
	mu      sync.Mutex
	waiting []*joinReq
	running int // turns given and not yet ended: each runs one call
}

type joinReq struct {
	// v is the shopper, with the proof of work checked for them: each
	// join's own goes with it to the script.
	v visitor
	// turned: the join was given a turn (under joinLine.mu). A join gets
	// at most one, always before its answer.
	turned bool
	// done gets the answer, or first the turn to run a call.
	done chan joinDone
}

type joinDone struct {
	turn bool
	rep  *reply
	one  shopperReply
	err  error
}

// join joins user through run, with the joins that arrive meanwhile. It
// waits for its answer even if ctx ends first: it may be the one to run a
// call that others wait for, and each call is bounded by Redis's time-outs.
func (l *joinLine) join(ctx context.Context, v visitor, run func(context.Context, []visitor) (*reply, error)) (*reply, shopperReply, error) {
	req := &joinReq{v: v, done: make(chan joinDone, 2)}
	l.mu.Lock()
	l.waiting = append(l.waiting, req)
	turn := l.running < maxJoinCalls
	if turn {
		l.running++
		req.turned = true
	}
	l.mu.Unlock()
	for {
		if turn {
			l.runOnce(context.WithoutCancel(ctx), run)
		}
		d := <-req.done
		if !d.turn {
			return d.rep, d.one, d.err
		}
		turn = true
	}
}

// runOnce runs one call for the first joins waiting (the caller's among
// them, unless another call took it), answers them, and hands the turn on.
func (l *joinLine) runOnce(ctx context.Context, run func(context.Context, []visitor) (*reply, error)) {
	l.mu.Lock()
	n := min(len(l.waiting), maxJoins)
	batch := l.waiting[:n:n]
	l.waiting = l.waiting[n:]
	l.mu.Unlock()
	if n > 0 {
		users := make([]visitor, n)
		for i, r := range batch {
			users[i] = r.v
		}
		rep, err := run(ctx, users)
		for i, r := range batch {
			d := joinDone{rep: rep, err: err}
			if err == nil {
				d.one = rep.shoppers[i]
			}
			r.done <- d
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.waiting {
		if !r.turned {
			r.turned = true
			r.done <- joinDone{turn: true}
			return
		}
	}
	// Every join waiting has a turn coming: this one ends.
	l.running--
}
