package room

import (
	"hash/maphash"
	"sync"
)

// ticketLen is the length of a ticket (newTicket), and so of an epoch.
const ticketLen = 27

// places remembers the tickets and places of the shoppers a board has
// seen, up to a bound, forgetting the least recently seen first (two
// generations: an entry not seen during a whole generation is dropped).
//
// It holds no pointer, so that the garbage collector never scans it: a
// process that remembers a full room's shoppers would otherwise pay for
// them on every collection, and so on every request it serves. A shopper
// is named by two independent 64-bit hashes of their id (with the SKU), so
// two shoppers share an entry with a chance of about n²/2¹²⁹.
type places struct {
	seeds [2]maphash.Seed
	mu    sync.Mutex
	gen   int // entries per generation
	young map[placeKey]place
	old   map[placeKey]place
}

type placeKey [2]uint64

// place is a shopper's ticket and its place in the line (0: in the
// pre-queue, not drawn yet), in the room state named epoch; closed is the
// reason a ticket is closed for good (its pass used or expired), 0 when
// open.
type place struct {
	ticket [ticketLen]byte
	epoch  [ticketLen]byte
	closed uint8
	place  int64
}

// Why a ticket is closed for good, as place.closed.
const (
	open uint8 = iota
	passUsed
	passExpired
	roomClosedForGood
)

// closedReasons are the reasons a closed ticket's answer gives.
var closedReasons = [...]string{open: "", passUsed: "pass_used", passExpired: "pass_expired", roomClosedForGood: roomClosed}

// closedBy is why a ticket of the room script's status is closed for
// good: its pass spent or expired, or its room closed (which is never
// undone); open for any other status.
func closedBy(status string) uint8 {
	switch status {
	case "spent":
		return passUsed
	case "expired":
		return passExpired
	case roomClosed:
		return roomClosedForGood
	}
	return open
}

func newPlaces(n int) *places {
	gen := max(n/2, 1)
	return &places{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, gen: gen,
		young: make(map[placeKey]place), old: make(map[placeKey]place)}
}

func (p *places) key(sku uint64, user string) placeKey {
	return placeKey{maphash.String(p.seeds[0], user) ^ sku*0x9e3779b97f4a7c15, maphash.String(p.seeds[1], user) + sku}
}

// get returns the place of user's ticket in the room of sku, if known.
func (p *places) get(k placeKey) (place, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.young[k]; ok {
		return v, true
	}
	v, ok := p.old[k]
	if ok {
		p.put(k, v)
	}
	return v, ok
}

// add remembers v as the place of k.
func (p *places) add(k placeKey, v place) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.put(k, v)
}

func (p *places) put(k placeKey, v place) {
	if len(p.young) >= p.gen {
		p.old, p.young = p.young, make(map[placeKey]place, p.gen)
	}
	p.young[k] = v
}

// fixed copies s, a ticket or an epoch, into an array; false if it is not
// of a ticket's length.
func fixed(s string) ([ticketLen]byte, bool) {
	var a [ticketLen]byte
	if len(s) != ticketLen {
		return a, false
	}
	copy(a[:], s)
	return a, true
}
