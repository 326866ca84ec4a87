package room

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seckill/seckill/internal/catalog"
)

//go:embed lua/control.lua
var controlLua string

var controlScript = redis.NewScript(controlLua)

// States of a room's controls, as Controls.State says them (Closed is
// also a ticket's status).
const (
	// Running: the room admits at its rate; buys need a pass.
	Running = "running"
	// Paused: the room admits nobody; joins and looks go on, and the
	// passes given stay valid.
	Paused = "paused"
	// Open: buys need no pass (a pass still buys); the room goes on
	// admitting.
	Open = "open"
)

// Actions an operator takes on a room (Command.Action).
const (
	ActionPause  = "pause"
	ActionResume = "resume"
	ActionRate   = "rate"
	ActionOpen   = "open"
	ActionClose  = "close"
)

// roomClosed is a ticket's status, and its closed reason, in a closed
// room.
const roomClosed = "room_closed"

// pausedRetry is when a waiting ticket of a paused room should look
// again.
const pausedRetry = 5000

// MaxChanges is the most changes a room's controls record; a change past
// them is refused (ErrTooManyChanges).
const MaxChanges = 1000

// Errors of Control.
var (
	// ErrInvalidCommand: an unknown action, or a rate missing or out of
	// range.
	ErrInvalidCommand = errors.New("invalid room command")
	// ErrRoomClosed: the room is closed, for good.
	ErrRoomClosed = errors.New("the waiting room is closed")
	// ErrTooManyChanges: the room recorded MaxChanges changes already.
	ErrTooManyChanges = errors.New("the waiting room's controls changed too many times")
	// ErrOpenDrop: open asked of a drop's room. Its passes are what keep a
	// shopper to the drop's limit over all its SKUs, so its buys always
	// need one; a higher rate lets the line in faster.
	ErrOpenDrop = errors.New("a drop's waiting room cannot be opened: each of its buys needs a pass, which keeps a shopper to the drop's limit over its skus; raise its rate instead")
	// ErrSaleOver: the sale has ended; its room changes no more.
	ErrSaleOver = errors.New("the sale has ended: its waiting room changes no more")
)

// Command is an operator's change to a room's controls.
type Command struct {
	Action string `json:"action"`
	// AdmitPerSecond is the rate of ActionRate, overriding the SKU's
	// admit_per_second: 1 to catalog.MaxAdmitPerSecond, or 0 to go back to
	// the SKU's own. Only ActionRate takes one.
	AdmitPerSecond *int `json:"admit_per_second,omitempty"`
}

// Validate checks c: ErrInvalidCommand naming what is wrong.
func (c Command) Validate() error {
	switch c.Action {
	case ActionPause, ActionResume, ActionOpen, ActionClose:
		if c.AdmitPerSecond != nil {
			return fmt.Errorf("%w: admit_per_second is only for the action rate", ErrInvalidCommand)
		}
	case ActionRate:
		if c.AdmitPerSecond == nil || *c.AdmitPerSecond < 0 || *c.AdmitPerSecond > catalog.MaxAdmitPerSecond {
			return fmt.Errorf("%w: rate needs admit_per_second from 1 to %d, or 0 for the SKU's own",
				ErrInvalidCommand, catalog.MaxAdmitPerSecond)
		}
	default:
		return fmt.Errorf("%w: action must be pause, resume, rate, open or close", ErrInvalidCommand)
	}
	return nil
}

// Change is one change made to a room's controls, at a server's time.
type Change struct {
	At     time.Time `json:"at"`
	Action string    `json:"action"`
	// AdmitPerSecond is the rate set, for ActionRate only.
	AdmitPerSecond *int `json:"admit_per_second,omitempty"`
}

// Controls are a room's controls: its state, the rate overriding the
// SKU's (0: none) and every change made, oldest first.
type Controls struct {
	SKU            uint64   `json:"sku_id"`
	State          string   `json:"state"`
	AdmitPerSecond int      `json:"admit_per_second"`
	Changes        []Change `json:"changes"`
}

// Control makes c on the room of the SKU with id and returns its
// controls. A command that changes nothing (the room is in that state
// already, as for a replay) is answered the controls and records nothing.
// Errors: ErrInvalidCommand, catalog.ErrNotFound, ErrNoRoom, ErrSaleOver,
// ErrRoomClosed for any change of a closed room, ErrTooManyChanges.
func (r *Room) Control(ctx context.Context, id uint64, c Command) (Controls, error) {
	if err := c.Validate(); err != nil {
		return Controls{}, err
	}
	sku, err := r.roomSKU(ctx, id)
	if err != nil {
		return Controls{}, err
	}
	if !sku.Room.On() {
		return Controls{}, ErrNoRoom
	}
	if c.Action == ActionOpen && sku.Group != nil {
		return Controls{}, ErrOpenDrop
	}
	now := r.o.Now()
	if !now.Before(sku.EndsAt) {
		return Controls{}, ErrSaleOver
	}
	ctl, err := r.control(ctx, r.keys(sku.ID), c, now, sku.EndsAt.Add(r.o.Keep))
	if err != nil {
		return Controls{}, fmt.Errorf("room: sku %d: %w", sku.ID, err)
	}
	ctl.SKU = sku.ID
	r.opens.set(sku.ID, ctl.State, now)
	return ctl, nil
}

// control makes c on the room whose state is under k, as at now, with
// its keys expiring at keep.
func (r *Room) control(ctx context.Context, k keys, c Command, now, keep time.Time) (Controls, error) {
	rate := 0
	if c.AdmitPerSecond != nil {
		rate = *c.AdmitPerSecond
	}
	entry, err := json.Marshal(Change{At: now.UTC().Truncate(time.Millisecond), Action: c.Action, AdmitPerSecond: c.AdmitPerSecond})
	if err != nil {
		return Controls{}, err
	}
	cmd, err := r.scripts.Run(ctx, controlScript, []string{k.control, k.changes, k.meta},
		c.Action, rate, now.UnixMilli(), entry, MaxChanges, keep.UnixMilli())
	if err != nil {
		return Controls{}, err
	}
	raw, err := cmd.Slice()
	if err != nil || len(raw) < 3 {
		return Controls{}, fmt.Errorf("control reply %v: %w", raw, err)
	}
	ctl, err := decodeControls(raw[1:])
	if err != nil {
		return Controls{}, err
	}
	switch toInt(raw[0]) {
	case 0, 1:
		return ctl, nil
	case -1:
		return Controls{}, ErrRoomClosed
	case -2:
		return Controls{}, fmt.Errorf("%w: at most %d", ErrTooManyChanges, MaxChanges)
	}
	return Controls{}, fmt.Errorf("control reply %v", raw)
}

// decodeControls reads the state, the rate and the changes the control
// script answers.
func decodeControls(raw []any) (Controls, error) {
	state, _ := raw[0].(string)
	rateText, _ := raw[1].(string)
	rate, err := strconv.Atoi(rateText)
	if err != nil {
		return Controls{}, fmt.Errorf("control rate %q: %w", rateText, err)
	}
	ctl := Controls{State: state, AdmitPerSecond: rate, Changes: make([]Change, 0, len(raw)-2)}
	for _, v := range raw[2:] {
		s, _ := v.(string)
		var ch Change
		if err := json.Unmarshal([]byte(s), &ch); err != nil {
			return Controls{}, fmt.Errorf("control change %q: %w", s, err)
		}
		ctl.Changes = append(ctl.Changes, ch)
	}
	return ctl, nil
}

// Controls returns the controls of the room of the SKU with id: ErrNoRoom
// for a SKU without one.
func (r *Room) Controls(ctx context.Context, id uint64) (Controls, error) {
	sku, err := r.roomSKU(ctx, id)
	if err != nil {
		return Controls{}, err
	}
	if !sku.Room.On() {
		return Controls{}, ErrNoRoom
	}
	ctl, err := r.readControls(ctx, r.keys(sku.ID))
	if err != nil {
		return Controls{}, fmt.Errorf("room: sku %d: %w", sku.ID, err)
	}
	ctl.SKU = sku.ID
	return ctl, nil
}

// readControls reads the controls of the room whose state is under k.
func (r *Room) readControls(ctx context.Context, k keys) (Controls, error) {
	pipe := r.rdb.Pipeline()
	c := pipe.HMGet(ctx, k.control, "state", "rate")
	list := pipe.LRange(ctx, k.changes, 0, -1)
	if _, err := pipe.Exec(ctx); err != nil {
		return Controls{}, err
	}
	state, _ := c.Val()[0].(string)
	if state == "" {
		state = Running
	}
	rate, _ := c.Val()[1].(string)
	if rate == "" {
		rate = "0"
	}
	raw := []any{state, rate}
	for _, s := range list.Val() {
		raw = append(raw, s)
	}
	return decodeControls(raw)
}

// openAt tells whether a buy placed at t may have needed no pass: the
// room was open then, or had been until less than a second before (every
// process obeys a change within one).
func (c Controls) openAt(t time.Time) bool {
	state := Running
	for i, ch := range c.Changes {
		next := stateAfter(state, ch.Action)
		if next == Open && !t.Before(ch.At) {
			end := i + 1
			for end < len(c.Changes) && stateAfter(Open, c.Changes[end].Action) == Open {
				end++
			}
			if end == len(c.Changes) || t.Before(c.Changes[end].At.Add(time.Second)) {
				return true
			}
		}
		state = next
	}
	return false
}

// stateAfter is the state action leaves a room in state in.
func stateAfter(state, action string) string {
	switch action {
	case ActionPause:
		return Paused
	case ActionResume:
		return Running
	case ActionOpen:
		return Open
	case ActionClose:
		return Closed
	}
	return state
}

// noTicket is the answer to a shopper without a ticket in the room of
// rep: closed in a closed room (which issues none), ErrNoTicket otherwise.
func noTicket(rep *reply) (Status, error) {
	if rep.state == Closed {
		return Status{Status: Closed, Reason: roomClosed}, nil
	}
	return Status{}, ErrNoTicket
}

// openFresh is how long a process trusts its copy of whether a room is
// open (buys need no pass): a change is obeyed by every process within a
// second.
const openFresh = 500 * time.Millisecond

// opens are a process's copies of its rooms' states, read when a buy
// comes without a pass, each for at most openFresh.
type opens struct {
	mu     sync.Mutex
	states map[uint64]openState // by SKU: one per SKU with a room
}

type openState struct {
	state string
	at    time.Time
}

func (o *opens) get(sku uint64, now time.Time) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	s, ok := o.states[sku]
	if !ok || now.Sub(s.at) >= openFresh || s.at.Sub(now) >= openFresh {
		return "", false
	}
	return s.state, true
}

func (o *opens) set(sku uint64, state string, now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.states == nil {
		o.states = map[uint64]openState{}
	}
	o.states[sku] = openState{state: state, at: now}
}

// isOpen tells whether the room of sku lets buys in without a pass, from
// this process's copy when fresh, else from Redis (one read at a time per
// SKU). A room whose state cannot be read is taken as not open.
func (r *Room) isOpen(ctx context.Context, sku uint64) bool {
	now := r.o.Now()
	if s, ok := r.opens.get(sku, now); ok {
		return s == Open
	}
	v, err, _ := r.reading.Do(strconv.FormatUint(sku, 10), func() (any, error) {
		// Every buy waiting on the read shares it: one giving up does
		// not end it for the others.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		s, err := r.rdb.HGet(ctx, r.keys(sku).control, "state").Result()
		if errors.Is(err, redis.Nil) {
			s, err = Running, nil
		}
		if err != nil {
			return "", err
		}
		r.opens.set(sku, s, now)
		return s, nil
	})
	return err == nil && v.(string) == Open
}
