package stock

import (
	"encoding/json"
	"fmt"
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
