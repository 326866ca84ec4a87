package stock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// TaskCreate is the type of the queue task that carries the orders a buy
// script accepted together to the SQL store.
const TaskCreate = "order.create"

// OrderTask is one order of a TaskCreate task: everything the drain needs
// to write the order row.
type OrderTask struct {
	OrderID    string `json:"o"`
	SKU        uint64 `json:"s"`
	User       string `json:"u"`
	Qty        int    `json:"q"`
	PriceCents int64  `json:"p"`
	CreatedMS  int64  `json:"c"`
	RequestID  string `json:"r,omitempty"`
	Fence      int64  `json:"f,omitempty"`
}

// DecodeOrders parses a TaskCreate payload: a JSON array of the batch's
// orders (or one order's object). It returns every order that decodes, and
// an error naming those that do not, so one bad order never holds back its
// neighbours.
func DecodeOrders(b []byte) ([]OrderTask, error) {
	if out, ok := parsePlainBatch(b); ok {
		return out, nil
	}
	if len(b) > 0 && b[0] == '{' {
		t, err := decodeOne(b)
		if err != nil {
			return nil, err
		}
		return []OrderTask{t}, nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("stock: order task: %w", err)
	}
	out := make([]OrderTask, 0, len(raw))
	var errs []error
	for _, r := range raw {
		t, err := decodeOne(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, t)
	}
	return out, errors.Join(errs...)
}

// decodeOne parses one order's object.
func decodeOne(b []byte) (OrderTask, error) {
	var t OrderTask
	p := taskParser{b: b}
	if !t.parsePlain(&p) || p.i != len(b) {
		t = OrderTask{}
		if err := json.Unmarshal(b, &t); err != nil {
			return t, fmt.Errorf("stock: order task: %w", err)
		}
	}
	if t.OrderID == "" || t.SKU == 0 || t.User == "" || t.Qty <= 0 {
		return t, fmt.Errorf("stock: order task incomplete: %q", b)
	}
	return t, nil
}

// appendJSON appends t as json.Marshal encodes it, without reflection for the
// usual ids (printable ASCII needing no escape).
func (t OrderTask) appendJSON(b []byte) []byte {
	if !plainJSON(t.OrderID) || !plainJSON(t.User) || !plainJSON(t.RequestID) {
		j, _ := json.Marshal(t) // strings and integers always encode
		return append(b, j...)
	}
	b = append(b, `{"o":"`...)
	b = append(b, t.OrderID...)
	b = append(b, `","s":`...)
	b = strconv.AppendUint(b, t.SKU, 10)
	b = append(b, `,"u":"`...)
	b = append(b, t.User...)
	b = append(b, `","q":`...)
	b = strconv.AppendInt(b, int64(t.Qty), 10)
	b = append(b, `,"p":`...)
	b = strconv.AppendInt(b, t.PriceCents, 10)
	b = append(b, `,"c":`...)
	b = strconv.AppendInt(b, t.CreatedMS, 10)
	if t.RequestID != "" {
		b = append(b, `,"r":"`...)
		b = append(b, t.RequestID...)
		b = append(b, '"')
	}
	if t.Fence != 0 {
		b = append(b, `,"f":`...)
		b = strconv.AppendInt(b, t.Fence, 10)
	}
	return append(b, '}')
}

// plainJSON reports whether encoding/json writes s as is between quotes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// parsePlainBatch reads a payload in exactly the form the buy script writes
// from appendJSON's objects for plain ids — "[" objects joined by "," "]" —
// without reflection. It reports false for anything else (DecodeOrders then
// uses encoding/json, which accepts such a payload with the same result).
func parsePlainBatch(b []byte) ([]OrderTask, bool) {
	p := taskParser{b: b}
	if !p.lit("[") {
		return nil, false
	}
	out := make([]OrderTask, 0, bytes.Count(b, []byte(`{"o":`)))
	for {
		var t OrderTask
		if !t.parsePlain(&p) || t.OrderID == "" || t.SKU == 0 || t.User == "" || t.Qty <= 0 {
			return nil, false
		}
		out = append(out, t)
		if !p.lit(",") {
			break
		}
	}
	return out, p.lit("]") && p.i == len(b)
}

// parsePlain reads one object in exactly the form appendJSON writes for
// plain ids.
func (t *OrderTask) parsePlain(p *taskParser) bool {
	var qty int64
	ok := p.lit(`{"o":`) && p.str(&t.OrderID) &&
		p.lit(`,"s":`) && p.uint(&t.SKU) &&
		p.lit(`,"u":`) && p.str(&t.User) &&
		p.lit(`,"q":`) && p.int(&qty, strconv.IntSize) &&
		p.lit(`,"p":`) && p.int(&t.PriceCents, 64) &&
		p.lit(`,"c":`) && p.int(&t.CreatedMS, 64)
	t.Qty = int(qty)
	if ok && p.peek(`,"r":`) {
		ok = p.lit(`,"r":`) && p.str(&t.RequestID)
	}
	if ok && p.peek(`,"f":`) {
		ok = p.lit(`,"f":`) && p.int(&t.Fence, 64)
	}
	return ok && p.lit("}")
}

type taskParser struct {
	b []byte
	i int
}

func (p *taskParser) peek(s string) bool {
	return len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s
}

func (p *taskParser) lit(s string) bool {
	if !p.peek(s) {
		return false
	}
	p.i += len(s)
	return true
}

// str reads a string of printable ASCII without escapes.
func (p *taskParser) str(dst *string) bool {
	if !p.lit(`"`) {
		return false
	}
	start := p.i
	for ; p.i < len(p.b) && p.b[p.i] != '"'; p.i++ {
		if c := p.b[p.i]; c < 0x20 || c > 0x7e || c == '\\' {
			return false
		}
	}
	if p.i == len(p.b) {
		return false
	}
	*dst = string(p.b[start:p.i])
	p.i++
	return true
}

// digits reads a JSON integer: its sign and magnitude, false on anything
// else or a magnitude beyond uint64.
func (p *taskParser) digits(signed bool) (neg bool, mag uint64, ok bool) {
	if signed && p.i < len(p.b) && p.b[p.i] == '-' {
		neg = true
		p.i++
	}
	d := p.i
	for ; p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9'; p.i++ {
		c := uint64(p.b[p.i] - '0')
		if mag > (math.MaxUint64-c)/10 {
			return false, 0, false
		}
		mag = mag*10 + c
	}
	if p.i == d || p.i-d > 1 && p.b[d] == '0' {
		return false, 0, false
	}
	return neg, mag, true
}

func (p *taskParser) uint(dst *uint64) bool {
	_, n, ok := p.digits(false)
	*dst = n
	return ok
}

// int reads an integer that fits in bits.
func (p *taskParser) int(dst *int64, bits int) bool {
	neg, mag, ok := p.digits(true)
	limit := uint64(1) << (bits - 1) // |min|; max is one less
	switch {
	case !ok, neg && mag > limit, !neg && mag >= limit:
		return false
	case neg:
		*dst = -int64(mag-1) - 1 //nolint:gosec // mag <= limit, checked above
	default:
		*dst = int64(mag) //nolint:gosec // mag < limit, checked above
	}
	return true
}
