package stock

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// TaskCreate is the type of the queue task that carries an accepted order
// to the SQL store.
const TaskCreate = "order.create"

// OrderTask is the payload of a TaskCreate task: everything the drain needs
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

// DecodeTask parses a TaskCreate payload.
func DecodeTask(b []byte) (OrderTask, error) {
	var t OrderTask
	if err := json.Unmarshal(b, &t); err != nil {
		return t, fmt.Errorf("stock: order task: %w", err)
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
