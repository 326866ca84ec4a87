package room

import (
	"fmt"
	"time"
)

// reply is the room script's answer (lua/room.lua).
type reply struct {
	left int64
	// admitted and expired: what this call admitted and found expired.
	admitted, expired, waiting int64
	cursor                     int64
	// prio is how many priority tickets wait: ahead of the whole line.
	prio  int64
	epoch string
	final bool
	// now is the time the script ran at; rate the admissions per second
	// in force; state the controls' state (Running, Paused, Open or
	// Closed).
	now   time.Time
	rate  float64
	state string
	// shoppers are the answers for the users given, in their order.
	shoppers []shopperReply
}

// shopperReply is the room script's answer for one shopper.
type shopperReply struct {
	found        bool // false: no ticket (a look, a join refused)
	reused       bool // a join refused: its proof of work was used
	status       string
	place, ahead int64
	ticket       string
	expiry       int64
	issued       bool
	priority     bool // a priority code's ticket: place and ahead in their line
}

// statuses are a ticket's statuses by the room script's numbers (2 on).
var statuses = [...]string{2: Waiting, 3: Admitted, 4: SoldOut, 5: "spent", 6: "expired", 7: roomClosed}

// shopper reads one shopper's answer of the room script: code, then
// place, ahead, pass expiry and ticket (lua/room.lua).
func shopper(code int64, v []any) (shopperReply, error) {
	const issued, priority = 8, 16
	status := code &^ (issued | priority)
	switch {
	case status == 0 || status == 1:
		return shopperReply{reused: status == 1}, nil
	case status >= int64(len(statuses)) || code < 0:
		return shopperReply{}, fmt.Errorf("status %d", code)
	}
	ticket, _ := v[3].(string)
	return shopperReply{found: true, status: statuses[status], place: toInt(v[0]), ahead: toInt(v[1]), expiry: toInt(v[2]),
		ticket: ticket, issued: code&issued != 0, priority: code&priority != 0}, nil
}
