// Package room is a SKU's waiting room: shoppers join it and are admitted
// in turn at a rate the backend takes, with a pass that their buy spends
// with the units. Those who join before the sale starts are drawn at random
// with a seed the SKU committed to in advance (its SHA-256 is published
// from the room's opening, the seed at the start), so that anyone can check
// the draw afterwards; later joiners queue behind them in join order.
//
// The state lives in Redis under the SKU's hash tag (lua/room.lua says
// how); any instance serves any shopper, and a killed instance loses
// nothing. Passes are checked in process (Signer), and spent by the buy
// script atomically with the stock.
package room

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base32"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/seckill/seckill/internal/catalog"
	"github.com/seckill/seckill/internal/stock"
)

//go:embed lua/room.lua
var roomLua string

var roomScript = redis.NewScript(roomLua)

// Errors.
var (
	// ErrNoRoom: the SKU has no waiting room.
	ErrNoRoom = errors.New("this sale has no waiting room")
	// ErrNotOpen: the room opens later.
	ErrNotOpen = errors.New("the waiting room is not open yet")
	// ErrNoTicket: the shopper has not joined (a look without joining).
	ErrNoTicket = errors.New("no ticket: join the waiting room first")
	// ErrNotPublished: the draw is published once the sale has ended.
	ErrNotPublished = errors.New("the draw is published when the sale ends")
	// ErrStateLost: the SKU's stock state is missing in Redis.
	ErrStateLost = errors.New("the sale's state in Redis is missing")
	// ErrBusy: another instance has been drawing the pre-queue for longer
	// than a look waits; nothing was written. Try again shortly.
	ErrBusy = errors.New("the waiting room is being drawn")
)

// Statuses of a ticket, as the API answers them.
const (
	Waiting  = "waiting"
	Admitted = "admitted"
	SoldOut  = "sold_out"
	Closed   = "closed"
)

// Status is a shopper's place in a room.
type Status struct {
	Status string `json:"status"`
	// Position is the ticket's place in the line, 1 first; 0 until the
	// pre-queue is drawn at the start of the sale.
	Position int64 `json:"position"`
	// Ahead is how many tickets are still to be admitted before it.
	Ahead        int64 `json:"ahead"`
	RetryAfterMS int64 `json:"retry_after_ms"`
	// Ticket is the shopper's ticket; none in an answer after the end.
	Ticket string `json:"ticket,omitempty"`
	// Pass is the pass to buy with while admitted; PassExpiresAt its end.
	Pass          string     `json:"pass,omitempty"`
	PassExpiresAt *time.Time `json:"pass_expires_at,omitempty"`
	// Reason says why a ticket is closed: pass_used, pass_expired or
	// sale_ended.
	Reason string `json:"reason,omitempty"`
	// ETAMS is how long a waiting ticket may expect to wait for its turn,
	// in milliseconds, at least 1; ETABasis says what it was reckoned from
	// (ETAStart, ETAMeasured, ETARate, ETAHeld). An estimate, never a
	// promise: both are set on a waiting ticket's answer only.
	ETAMS    int64  `json:"eta_ms,omitempty"`
	ETABasis string `json:"eta_basis,omitempty"`
	// Priority marks a priority code's ticket (codes.go): its Position
	// and Ahead are in the line of priority tickets, admitted first.
	Priority bool `json:"priority,omitempty"`
}

// SKUs finds a SKU by id (catalog.Cache): catalog.ErrNotFound for none.
type SKUs interface {
	Get(ctx context.Context, id uint64) (*catalog.SKU, error)
}

// Scripts runs a script so that its writes are acknowledged as the store
// is configured to (replica.Waiter).
type Scripts interface {
	Run(ctx context.Context, script *redis.Script, keys []string, args ...any) (*redis.Cmd, error)
}

// Pace is how fast the backend persists orders (pace.Pace): the most
// orders written in one second of the last minute, by every instance.
type Pace interface {
	Best(ctx context.Context) float64
}

// Options configure a Room.
type Options struct {
	Prefix string
	// AdmitPerSecond is the least rate of a room whose admit_per_second is
	// 0, which admits at twice the backend's best second (Pace), so that
	// admission grows while the drain keeps up.
	AdmitPerSecond int
	// Pace measures the backend (nil: rooms of rate 0 admit at
	// AdmitPerSecond).
	Pace Pace
	// Keep is how long a room's state is kept after the sale ends, for
	// its published draw.
	Keep    time.Duration
	Now     func() time.Time
	Metrics *Metrics
	// OnStateLost is called, in a goroutine of its own and once at a time
	// per SKU, when a visit finds the SKU's stock state missing in Redis:
	// it should rebuild it. A room's shoppers cannot start the rebuild by
	// buying, as a buy needs a pass and none is issued meanwhile.
	OnStateLost func(sku uint64)
}

// Room serves the waiting rooms of every SKU.
type Room struct {
	skus    SKUs
	rdb     redis.UniversalClient
	scripts Scripts
	signer  *Signer
	o       Options
	drawing singleflight.Group
	// publishing builds each published draw's document once at a time;
	// draws keeps the last ones built.
	publishing singleflight.Group
	draws      draws
	// restoring runs OnStateLost once at a time per SKU.
	restoring singleflight.Group
	// opens are the rooms' states as buys without a pass last read them;
	// reading reads each once at a time.
	opens   opens
	reading singleflight.Group
}

// New returns the rooms of skus, kept in rdb, writing through scripts,
// with passes signed by signer.
func New(skus SKUs, rdb redis.UniversalClient, scripts Scripts, signer *Signer, o Options) *Room {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AdmitPerSecond <= 0 {
		o.AdmitPerSecond = 100
	}
	if o.Keep <= 0 {
		o.Keep = 7 * 24 * time.Hour
	}
	return &Room{skus: skus, rdb: rdb, scripts: scripts, signer: signer, o: o}
}

// keys are the names of a SKU's room state.
type keys struct {
	meta, who, pre, line, passes, expired, valid, drawLock, pow string
	// control and changes are the operator's controls (control.go).
	control, changes string
	// codes, prio and prioat are the priority codes and their tickets
	// (codes.go).
	codes, prio, prioat string
}

func (r *Room) keys(sku uint64) keys {
	p := stock.RoomPrefix(r.o.Prefix, sku)
	return keys{meta: p + "meta", who: p + "who", pre: p + "pre", line: p + "line", passes: p + "passes",
		expired: p + "expired", valid: p + "valid", drawLock: p + "drawing", pow: p + "pow",
		control: p + "control", changes: p + "changes", codes: p + "codes", prio: p + "prio", prioat: p + "prioat"}
}

// Join gives user a ticket in the room of the SKU with id sku (the one
// they have, if any) and answers their place. In a room with pow_bits only
// a shopper who holds a ticket is answered (ErrPowRequired otherwise):
// JoinWithProof joins with a proof of work.
func (r *Room) Join(ctx context.Context, sku uint64, user string) (Status, error) {
	return r.look(ctx, sku, user, "join", "")
}

// JoinWithProof is Join with proof, "<challenge>:<nonce>" (pow.go), for a
// room with pow_bits: a shopper without a ticket needs one, checked before
// anything is written, and used once. "" is no proof; a room without
// pow_bits ignores it.
func (r *Room) JoinWithProof(ctx context.Context, sku uint64, user, proof string) (Status, error) {
	return r.look(ctx, sku, user, "join", proof)
}

// Peek answers user's place in the room of the SKU with id sku without
// joining: ErrNoTicket if they have not joined.
func (r *Room) Peek(ctx context.Context, sku uint64, user string) (Status, error) {
	return r.look(ctx, sku, user, "peek", "")
}

// look is a join or a look at the room of the SKU with id sku, answered
// from Redis.
func (r *Room) look(ctx context.Context, id uint64, user, op, proof string) (Status, error) {
	sku, now, closed, err := r.open(ctx, id)
	if err != nil {
		return Status{}, err
	}
	if closed != nil {
		return *closed, nil
	}
	v, err := r.visitor(sku, user, op, proof)
	if err != nil {
		return Status{}, err
	}
	rep, err := r.script(ctx, sku, []visitor{v}, op, now)
	if err != nil {
		return Status{}, err
	}
	if err := v.refused(rep.shoppers[0]); err != nil {
		if rep.state == Closed {
			return noTicket(rep)
		}
		return Status{}, err
	}
	return r.answer(sku, user, rep, rep.shoppers[0], measure{}), nil
}

// open finds the SKU with id sku and checks that its room can be visited
// now; a SKU whose sale has ended answers its closed status, with no
// visit needed.
func (r *Room) open(ctx context.Context, id uint64) (*catalog.SKU, time.Time, *Status, error) {
	sku, err := r.roomSKU(ctx, id)
	if err != nil {
		return nil, time.Time{}, nil, err
	}
	if !sku.Room.On() {
		return nil, time.Time{}, nil, ErrNoRoom
	}
	now := r.o.Now()
	if !now.Before(sku.EndsAt) {
		// Nothing to join or wait for: no ticket is issued after the end,
		// also of a sale ended before its room was to open.
		return sku, now, &Status{Status: Closed, Reason: "sale_ended"}, nil
	}
	if now.Before(*sku.Room.OpensAt) {
		return nil, time.Time{}, nil, fmt.Errorf("%w: it opens at %s", ErrNotOpen, sku.Room.OpensAt.UTC().Format(time.RFC3339))
	}
	return sku, now, nil, nil
}

// script runs the room script for users (op join or peek) or for the room
// alone (tick, no users), drawing the pre-queue first when it is due.
func (r *Room) script(ctx context.Context, sku *catalog.SKU, users []visitor, op string, now time.Time) (*reply, error) {
	for attempt := 0; ; attempt++ {
		rep, err := r.run(ctx, sku, users, op, now)
		if !errors.Is(err, errDrawDue) {
			return rep, err
		}
		if attempt > 0 { // drawn, and due again: Redis lost the draw meanwhile
			return nil, fmt.Errorf("%w: sku %d: the draw is due again", ErrBusy, sku.ID)
		}
		if err := r.draw(ctx, sku); err != nil {
			return nil, err
		}
		now = r.o.Now()
	}
}

var errDrawDue = errors.New("room: the draw is due")

func (r *Room) run(ctx context.Context, sku *catalog.SKU, users []visitor, op string, now time.Time) (*reply, error) {
	k := r.keys(sku.ID)
	rate := r.rate(ctx, sku)
	expire := sku.EndsAt.Add(r.o.Keep)
	step := 2 // the proof of work only when a join needs one
	for _, u := range users {
		if u.proof != "" {
			step = 4
		}
	}
	args := make([]any, 0, 9+step*len(users))
	args = append(args, op, now.UnixMilli(), sku.StartsAt.UnixMilli(), sku.Room.Mode, rate,
		sku.Room.PassTTLMS, strconv.FormatFloat(sku.Room.Overbook, 'f', -1, 64), expire.UnixMilli(), step)
	tickets := make([]string, len(users))
	for i, u := range users {
		if op == "join" { // a look issues none
			tickets[i] = newTicket()
		}
		args = append(args, u.user, tickets[i])
		if step == 4 {
			args = append(args, u.proof, u.expires)
		}
	}
	keys := []string{k.meta, k.who, k.pre, k.line, k.passes, k.expired, stock.HashKey(r.o.Prefix, stock.Part{SKU: sku.ID}), k.valid,
		k.control, k.pow, k.prio, k.prioat}
	if sku.Group != nil {
		for _, id := range sku.Group.SKUs[1:] {
			keys = append(keys, stock.HashKey(r.o.Prefix, stock.Part{SKU: id, Drop: sku.ID}))
		}
	}
	cmd, err := r.scripts.Run(ctx, roomScript, keys, args...)
	if err != nil {
		return nil, fmt.Errorf("room: sku %d: %w", sku.ID, err)
	}
	raw, err := cmd.Slice()
	if err != nil || len(raw) == 0 {
		return nil, fmt.Errorf("room: sku %d: reply %v: %w", sku.ID, raw, err)
	}
	switch toInt(raw[0]) {
	case 1:
	case -2:
		return nil, errDrawDue
	case -3:
		lost := sku.ID
		if i := int(toInt(raw[len(raw)-1])) - 13; i >= 0 && sku.Group != nil && i+1 < len(sku.Group.SKUs) {
			lost = sku.Group.SKUs[i+1]
		}
		r.stateLost(lost)
		return nil, fmt.Errorf("%w: sku %d", ErrStateLost, lost)
	default:
		return nil, fmt.Errorf("room: sku %d: reply %v", sku.ID, raw)
	}
	const head, each = 11, 5
	if len(raw) != head+each*len(users) {
		return nil, fmt.Errorf("room: sku %d: reply %v", sku.ID, raw)
	}
	epoch, _ := raw[6].(string)
	state, _ := raw[8].(string)
	rateText, _ := raw[9].(string)
	if v, err := strconv.ParseFloat(rateText, 64); err == nil && v > 0 {
		rate = v
	}
	rep := &reply{left: toInt(raw[1]), admitted: toInt(raw[2]), expired: toInt(raw[3]), waiting: toInt(raw[4]),
		cursor: toInt(raw[5]), epoch: epoch, final: toInt(raw[7]) == 1, now: now, rate: rate, state: state, prio: toInt(raw[10]),
		shoppers: make([]shopperReply, len(users))}
	issued := int64(0)
	for i := range users {
		v := raw[head+each*i : head+each*(i+1)]
		s, err := shopper(toInt(v[0]), v[1:])
		if err != nil {
			return nil, fmt.Errorf("room: sku %d: reply %v: %w", sku.ID, raw, err)
		}
		if s.issued {
			s.ticket = tickets[i]
			issued++
		}
		rep.shoppers[i] = s
	}
	r.o.Metrics.visit(sku.ID, issued, rep.admitted, rep.expired, rep.waiting, rate)
	return rep, nil
}

// answer is the status s, of rep, gives user; m is the room's admission
// rate as measured, if known.
func (r *Room) answer(sku *catalog.SKU, user string, rep *reply, s shopperReply, m measure) Status {
	now := rep.now
	st := Status{Status: s.status, Position: s.place, Ahead: s.ahead, Ticket: s.ticket, Priority: s.priority}
	switch st.Status {
	case "admitted":
		exp := time.UnixMilli(s.expiry).UTC()
		st.Pass = r.signer.Sign(sku.ID, st.Ticket, user, exp)
		st.PassExpiresAt = &exp
		st.RetryAfterMS = max(exp.Sub(now).Milliseconds(), 0)
	case "spent", "expired", roomClosed:
		st.Reason = closedReasons[closedBy(st.Status)]
		st.Status = Closed
		st.RetryAfterMS = max(sku.EndsAt.Sub(now).Milliseconds(), 0)
	case SoldOut:
		st.RetryAfterMS = soldOutRetry
	default:
		st.RetryAfterMS = r.retryAfter(sku, st, now, rep.rate, rep.state)
		st.ETAMS, st.ETABasis = estimate(sku, st, now, rep.rate, m, rep.state)
	}
	return st
}

// CheckPass returns the pass if it is a valid pass of user for sku now, in
// process: ErrPassRequired without one, ErrPassInvalid for one that is
// not. A SKU of a drop takes a pass of the drop's room. Whether it is
// spent is for the buy script to say. A buy without a pass of an open room
// (Open) is let in with the zero Pass, as for a SKU without a room;
// whether the room is open is read from Redis at most every openFresh per
// SKU. A drop's room is never open (Control).
func (r *Room) CheckPass(ctx context.Context, sku *catalog.SKU, user, pass string) (stock.Pass, error) {
	if pass == "" {
		if sku.Drop == 0 && r.isOpen(ctx, sku.ID) {
			return stock.Pass{}, nil
		}
		return stock.Pass{}, ErrPassRequired
	}
	ticket, exp, err := r.signer.Check(pass, sku.RoomID(), user, r.o.Now())
	if err != nil {
		return stock.Pass{}, err
	}
	return stock.Pass{Ticket: ticket, Expires: exp}, nil
}

// roomSKU finds the SKU whose room gates the SKU with id: the first SKU of
// its drop (whose row keeps the drop's room, and whose Group lists the
// drop's SKUs), or itself.
func (r *Room) roomSKU(ctx context.Context, id uint64) (*catalog.SKU, error) {
	sku, err := r.skus.Get(ctx, id)
	if err != nil || sku.RoomID() == sku.ID {
		return sku, err
	}
	return r.skus.Get(ctx, sku.RoomID())
}

// stateLost starts OnStateLost for sku unless it is running already.
func (r *Room) stateLost(sku uint64) {
	if r.o.OnStateLost == nil {
		return
	}
	r.restoring.DoChan(strconv.FormatUint(sku, 10), func() (any, error) {
		r.o.OnStateLost(sku)
		return nil, nil
	})
}

// newTicket is a ticket: "t" and 26 random base32 characters, so that
// tickets say nothing of their shoppers or of the order they joined in.
func newTicket() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "t" + ticketEncoding.EncodeToString(b[:])
}

// ticketEncoding is base32 in lower case.
var ticketEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return math.MinInt64
}
