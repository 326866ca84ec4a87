package room

import (
	"context"
	"sync"
	"time"
)

// A shopper connected to a stream of their statuses (Server-Sent Events)
// is followed from the board: every follower of a room on this process
// waits on the room's news, which the room's tick gives when its copy
// changes, and answers its shopper from the copy and the place it holds,
// as a look does (Board.Peek). A follower goes to Redis only when the copy
// cannot answer: its shopper's turn has come (for the pass), the line is
// not drawn yet, the copy is stale. So a crowd of streams costs the room
// no more Redis calls than the tick's, whatever its size.

// moveGap is the least time between two statuses told for a move in the
// line alone (position, ahead): a change of status is told at once.
const moveGap = time.Second

// news tells the followers of a room that its copy changed. moved is
// closed when the cursor moved or a priority ticket joined or was
// admitted (the tickets waiting are nearer their turn, or farther); turned when what a follower must tell at once may have changed:
// the units ran out or came back, the line became final, the room's state
// was made again, the copy became unusable or usable again, or the
// room's tick stopped (gone). Each is made again after it is closed, and
// only while someone follows the room.
type news struct {
	mu            sync.Mutex
	moved, turned chan struct{}
	last          roomCopy
	usable, gone  bool
}

// keep stores c, the room's copy just read (nil: none usable), and tells
// the followers what changed.
func (s *standing) keep(c *roomCopy) {
	s.copy.Store(c)
	n := &s.news
	n.mu.Lock()
	defer n.mu.Unlock()
	var moved, turned bool
	if c == nil {
		turned = n.usable
		n.usable = false
	} else {
		l := n.last
		turned = !n.usable || (c.left == 0) != (l.left == 0) || c.final != l.final || c.epoch != l.epoch ||
			!c.startsAt.Equal(l.startsAt) || c.state != l.state
		moved = c.cursor != l.cursor || c.prio != l.prio
		n.last, n.usable = *c, true
	}
	n.ring(moved, turned)
}

// stopped tells the followers that the room's tick has stopped: they find
// the room again (a new tick), or learn that it is over.
func (s *standing) stopped() {
	n := &s.news
	n.mu.Lock()
	defer n.mu.Unlock()
	n.gone = true
	n.ring(true, true)
}

func (n *news) ring(moved, turned bool) {
	if moved && n.moved != nil {
		close(n.moved)
		n.moved = nil
	}
	if turned && n.turned != nil {
		close(n.turned)
		n.turned = nil
	}
}

// bells returns the channels the next news closes, and whether the room's
// tick has stopped.
func (n *news) bells() (moved, turned <-chan struct{}, gone bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.moved == nil {
		n.moved = make(chan struct{})
	}
	if n.turned == nil {
		n.turned = make(chan struct{})
	}
	return n.moved, n.turned, n.gone
}

// rung is a channel closed already: what a follower waits on to look again
// as soon as it may.
var rung = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Follower follows one shopper's status in a room, for a stream: see
// Board.Follow. It is used by one goroutine at a time.
type Follower struct {
	b    *Board
	sku  uint64
	user string
	s    *standing

	// moved and turned are the news the last status was read before.
	moved, turned <-chan struct{}
	// last is the status told last (first: the one to tell first), at.
	last  Status
	at    time.Time
	first bool
	timer *time.Timer
}

// Follow starts following user's status in the room of the SKU with id
// sku. It fails as a look does (ErrNoTicket for a shopper who has not
// joined, ErrNoRoom, ...) before anything is followed; the first Next
// answers the status it read.
func (b *Board) Follow(ctx context.Context, sku uint64, user string) (*Follower, error) {
	f := &Follower{b: b, sku: sku, user: user, first: true, timer: time.NewTimer(time.Hour)}
	f.timer.Stop()
	// Checked before the room is followed: a SKU without a room starts no
	// tick.
	s, now, closed, err := b.room.open(ctx, sku)
	if err != nil {
		return nil, err
	}
	if closed != nil {
		f.last = *closed
		return f, nil
	}
	f.sku = s.ID // the room's: a SKU of a drop is followed in the drop's room
	f.s = b.standing(s.ID, now)
	if f.last, err = f.read(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// read reads the shopper's status as a look does, the news it is to be
// told again after noted first, so that none is missed between the two.
func (f *Follower) read(ctx context.Context) (Status, error) {
	moved, turned, gone := f.s.news.bells()
	if gone {
		// The room's tick stopped: a look finds whether it is over, and
		// starts a new tick otherwise.
		st, err := f.b.Peek(ctx, f.sku, f.user)
		f.s = f.b.standing(f.sku, f.b.room.o.Now())
		moved, turned, _ = f.s.news.bells()
		f.moved, f.turned = moved, turned
		return st, err
	}
	f.moved, f.turned = moved, turned
	return f.b.Peek(ctx, f.sku, f.user)
}

// Next waits for the next status to tell the shopper and returns it, true:
// the first call answers at once; later ones a status that differs from
// the last told (in status, place, pass or reason), a move in the line
// alone at most once per moveGap. After idle with nothing to tell it
// answers false (time for a heartbeat). An error is a look's, or ctx's.
// After a closed status there is nothing more to tell.
//
// An admitted shopper is looked at again (in Redis) when their pass
// expires and when the room's standing turns: their status changes then
// only, and a move in the line does not concern them.
func (f *Follower) Next(ctx context.Context, idle time.Duration) (Status, bool, error) {
	if f.first {
		f.first = false
		f.at = time.Now()
		return f.last, true, nil
	}
	deadline := time.Now().Add(idle)
	for {
		if f.s == nil || f.last.Status == Closed {
			// Nothing more to tell.
			f.moved, f.turned = nil, nil
		} else {
			// The room's tick runs while its followers wait.
			f.s.visited.Store(f.b.room.o.Now().UnixNano())
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return Status{}, false, nil
		}
		var moved <-chan struct{}
		switch gap := moveGap - time.Since(f.at); {
		case f.last.Status == Admitted && f.last.PassExpiresAt != nil:
			// Looked at again when the pass expires, then every moveGap
			// until Redis agrees.
			if d := time.Until(*f.last.PassExpiresAt); d > 0 {
				wait = min(wait, d)
			} else {
				wait = min(wait, moveGap)
			}
		case f.last.Status == Admitted:
		case gap > 0:
			wait = min(wait, gap)
		default:
			moved = f.moved
		}
		f.timer.Reset(wait)
		select {
		case <-ctx.Done():
			f.timer.Stop()
			return Status{}, false, ctx.Err()
		case <-f.timer.C:
			if !time.Now().Before(deadline) {
				return Status{}, false, nil
			}
			if f.last.Status != Admitted {
				continue // the gap passed: moves may be told again
			}
		case <-moved:
			f.timer.Stop()
		case <-f.turned:
			f.timer.Stop()
		}
		st, err := f.read(ctx)
		if err != nil {
			return Status{}, false, err
		}
		if !changed(f.last, st) {
			continue
		}
		now := time.Now()
		if movedOnly(f.last, st) && now.Sub(f.at) < moveGap {
			// Told when the gap has passed, read anew then.
			f.moved = rung
			continue
		}
		f.last, f.at = st, now
		return st, true, nil
	}
}

// changed reports whether b says something a did not, a ticket's changing
// Retry-After and estimate aside (but not the estimate's basis: a pause
// and a resume are news).
func changed(a, b Status) bool {
	return a.Status != b.Status || a.Position != b.Position || a.Ahead != b.Ahead || a.Pass != b.Pass ||
		a.Reason != b.Reason || a.ETABasis != b.ETABasis
}

// movedOnly reports whether b differs from a in the place in line alone.
func movedOnly(a, b Status) bool {
	return a.Status == b.Status && a.Pass == b.Pass && a.Reason == b.Reason
}
