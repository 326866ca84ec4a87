package room

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Priority codes let their holders skip a room's line: an operator makes
// them (CreateCodes) and hands them to members or staff; a join with one
// (JoinWithCode) puts the shopper's ticket in the priority line, which
// the room admits before any ticket of its line, at the room's rate and
// within its overbook, in the order the codes were used. A code issues
// one ticket, to one shopper. The published draw lists the priority
// tickets and the line's cursor when each was admitted, so that the order
// of admission stays recomputable. Redis holds the codes by their SHA-256
// with the room's state (lua/code.lua).

//go:embed lua/code.lua
var codeLua string

var codeScript = redis.NewScript(codeLua)

// Bounds of priority codes.
const (
	// MaxCodes is the most codes a room holds.
	MaxCodes = 10_000
	// MaxCodesAtOnce is the most codes one CreateCodes makes.
	MaxCodesAtOnce = 1_000
	// codeLen is a code's length: "c" and 26 base32 characters.
	codeLen = 27
)

// Errors of priority codes.
var (
	// ErrInvalidCodeCount: a CreateCodes count out of its bounds.
	ErrInvalidCodeCount = fmt.Errorf("count must be from 1 to %d", MaxCodesAtOnce)
	// ErrTooManyCodes: the room would hold more than MaxCodes.
	ErrTooManyCodes = fmt.Errorf("a waiting room holds at most %d priority codes", MaxCodes)
	// ErrCodeMalformed: not a priority code's form.
	ErrCodeMalformed = errors.New("a priority code is \"c\" and 26 letters a-z or digits 2-7")
	// ErrCodeUnknown: no such code in this room.
	ErrCodeUnknown = errors.New("no such priority code in this waiting room")
	// ErrCodeUsed: the code was used by another shopper.
	ErrCodeUsed = errors.New("the priority code was used already")
	// ErrCodeAfterTicket: the shopper holds a ticket of the line already;
	// the code is left unused.
	ErrCodeAfterTicket = errors.New("the shopper holds a ticket of this waiting room already: the priority code was not used")
)

// Codes are a room's priority codes: the ones just made (CreateCodes
// only; shown once, never stored in the clear), how many the room holds
// and how many were used.
type Codes struct {
	SKU   uint64   `json:"sku_id"`
	Codes []string `json:"codes,omitempty"`
	Total int64    `json:"total"`
	Used  int64    `json:"used"`
}

// CodeCount is the body of a request for codes.
type CodeCount struct {
	Count int `json:"count"`
}

// Validate checks c: ErrInvalidCodeCount for a count out of its bounds.
func (c CodeCount) Validate() error {
	if c.Count < 1 || c.Count > MaxCodesAtOnce {
		return ErrInvalidCodeCount
	}
	return nil
}

// CreateCodes makes n priority codes for the room of the SKU with id.
// Errors: ErrInvalidCodeCount, catalog.ErrNotFound, ErrNoRoom,
// ErrSaleOver, ErrRoomClosed, ErrTooManyCodes; nothing is written with
// any of them.
func (r *Room) CreateCodes(ctx context.Context, id uint64, n int) (Codes, error) {
	if err := (CodeCount{Count: n}).Validate(); err != nil {
		return Codes{}, err
	}
	sku, err := r.roomSKU(ctx, id)
	if err != nil {
		return Codes{}, err
	}
	if !sku.Room.On() {
		return Codes{}, ErrNoRoom
	}
	now := r.o.Now()
	if !now.Before(sku.EndsAt) {
		return Codes{}, ErrSaleOver
	}
	out := Codes{SKU: sku.ID, Codes: make([]string, n)}
	args := make([]any, 0, 4+n)
	args = append(args, "add", now.UnixMilli(), sku.EndsAt.Add(r.o.Keep).UnixMilli(), MaxCodes)
	for i := range out.Codes {
		out.Codes[i] = newCode()
		args = append(args, codeHash(out.Codes[i]))
	}
	raw, err := r.runCodes(ctx, sku.ID, args)
	if err != nil {
		return Codes{}, err
	}
	switch toInt(raw[0]) {
	case -1:
		return Codes{}, ErrRoomClosed
	case -2:
		return Codes{}, ErrTooManyCodes
	}
	out.Total, out.Used = toInt(raw[1]), toInt(raw[2])
	return out, nil
}

// CodeCounts answers how many priority codes the room of the SKU with id
// holds and how many were used.
func (r *Room) CodeCounts(ctx context.Context, id uint64) (Codes, error) {
	sku, err := r.roomSKU(ctx, id)
	if err != nil {
		return Codes{}, err
	}
	if !sku.Room.On() {
		return Codes{}, ErrNoRoom
	}
	k := r.keys(sku.ID)
	pipe := r.rdb.Pipeline()
	total, used := pipe.HLen(ctx, k.codes), pipe.HGet(ctx, k.meta, "pseq")
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Codes{}, fmt.Errorf("room: codes of sku %d: %w", id, err)
	}
	n, _ := used.Int64()
	return Codes{SKU: sku.ID, Total: total.Val(), Used: n}, nil
}

// JoinWithCode joins user to the room of the SKU with id with a priority
// code, and answers their place in the priority line. A retry (the code
// used by this shopper already) answers the same ticket. Errors:
// ErrCodeMalformed, ErrCodeUnknown, ErrCodeUsed, ErrCodeAfterTicket, as
// well as a look's; nothing is written with any of them. A closed room
// answers Closed and leaves the code unused.
func (r *Room) JoinWithCode(ctx context.Context, id uint64, user, code string) (Status, error) {
	if !validCode(code) {
		return Status{}, ErrCodeMalformed
	}
	sku, now, closed, err := r.open(ctx, id)
	if err != nil {
		return Status{}, err
	}
	if closed != nil {
		return *closed, nil
	}
	raw, err := r.runCodes(ctx, sku.ID, []any{"use", now.UnixMilli(), sku.EndsAt.Add(r.o.Keep).UnixMilli(),
		user, newTicket(), codeHash(code)})
	if err != nil {
		return Status{}, err
	}
	switch toInt(raw[0]) {
	case -1:
		return Status{Status: Closed, Reason: roomClosed}, nil
	case -3:
		return Status{}, ErrCodeUnknown
	case -4:
		return Status{}, ErrCodeUsed
	case -5:
		return Status{}, ErrCodeAfterTicket
	}
	if toInt(raw[2]) == 1 {
		r.o.Metrics.issue(sku.ID)
	}
	return r.look(ctx, sku.ID, user, "peek", "")
}

func (r *Room) runCodes(ctx context.Context, id uint64, args []any) ([]any, error) {
	k := r.keys(id)
	cmd, err := r.scripts.Run(ctx, codeScript, []string{k.meta, k.who, k.prio, k.codes, k.control}, args...)
	if err != nil {
		return nil, fmt.Errorf("room: codes of sku %d: %w", id, err)
	}
	raw, err := cmd.Slice()
	if err != nil || len(raw) == 0 || toInt(raw[0]) == 1 && len(raw) != 3 {
		return nil, fmt.Errorf("room: codes of sku %d: reply %v: %w", id, raw, err)
	}
	return raw, nil
}

// newCode is a priority code: "c" and 26 random base32 characters.
func newCode() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "c" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// validCode reports whether s has a code's form (newCode).
func validCode(s string) bool {
	if len(s) != codeLen || s[0] != 'c' {
		return false
	}
	for _, c := range s[1:] {
		if (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// codeHash is what Redis keeps of a code: its SHA-256, in hex.
func codeHash(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// JoinWithCode is Room.JoinWithCode: a priority ticket is answered from
// Redis, never from the board's copy.
func (b *Board) JoinWithCode(ctx context.Context, sku uint64, user, code string) (Status, error) {
	return b.room.JoinWithCode(ctx, sku, user, code)
}

// CreateCodes is Room.CreateCodes.
func (b *Board) CreateCodes(ctx context.Context, sku uint64, n int) (Codes, error) {
	return b.room.CreateCodes(ctx, sku, n)
}

// CodeCounts is Room.CodeCounts.
func (b *Board) CodeCounts(ctx context.Context, sku uint64) (Codes, error) {
	return b.room.CodeCounts(ctx, sku)
}

// PriorityTicket is a priority code's ticket in a published draw: After
// is how many of the line's tickets were admitted before it, nil if it
// never was.
type PriorityTicket struct {
	Ticket string `json:"ticket"`
	After  *int64 `json:"after"`
}

// priorityTickets reads the priority tickets of the room under k in the
// order their codes were used (at most MaxCodes).
func (r *Room) priorityTickets(ctx context.Context, k keys) ([]PriorityTicket, error) {
	tickets, err := r.rdb.ZRange(ctx, k.prio, 0, -1).Result()
	if err != nil || len(tickets) == 0 {
		return []PriorityTicket{}, err
	}
	at, err := r.rdb.HMGet(ctx, k.prioat, tickets...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]PriorityTicket, len(tickets))
	for i, t := range tickets {
		out[i].Ticket = t
		if _, ok := at[i].(string); ok {
			n := toInt(at[i])
			out[i].After = &n
		}
	}
	return out, nil
}
