package catalog

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// Waiting room modes.
const (
	RoomRandom = "random" // the pre-queue is drawn at random at starts_at
	RoomFIFO   = "fifo"   // first come, first served from opens_at
)

// Limits and defaults of a waiting room.
const (
	MaxAdmitPerSecond = 100_000
	MinPassTTL        = 5 * time.Second
	MaxPassTTL        = time.Hour
	DefaultPassTTL    = 60 * time.Second
	DefaultOverbook   = 1.2
	MaxOverbook       = 10
	// MaxPowBits is the most leading zero bits a room's proof of work may
	// ask for: 2^32 hashes, hours on a phone, is past any sensible cost.
	MaxPowBits = 32
)

// RoomSpec is a SKU's waiting room as an admin gives it ("waiting_room"),
// at the SKU's creation only. OpensAt is required; the others have
// defaults: mode random, admit_per_second 0 (the configured default rate),
// pass_ttl 60s, overbook 1.2, pow_bits 0 (no proof of work to join).
type RoomSpec struct {
	OpensAt        *time.Time `json:"opens_at" yaml:"opens_at"`
	Mode           string     `json:"mode,omitempty" yaml:"mode"`
	AdmitPerSecond int        `json:"admit_per_second,omitempty" yaml:"admit_per_second"`
	PassTTL        TTL        `json:"pass_ttl,omitzero" yaml:"pass_ttl"`
	Overbook       float64    `json:"overbook,omitempty" yaml:"overbook"`
	PowBits        int        `json:"pow_bits,omitempty" yaml:"pow_bits"`
}

// TTL is a duration written as Go writes one ("60s", "1m30s").
type TTL time.Duration

// UnmarshalJSON reads a duration string.
func (d *TTL) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration such as \"60s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("a duration such as \"60s\"")
	}
	*d = TTL(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d TTL) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalText reads a duration string (YAML).
func (d *TTL) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("pass_ttl: a duration such as \"60s\"")
	}
	*d = TTL(v)
	return nil
}

// validate checks r alone; Spec.New and Apply check it against the window.
func (r *RoomSpec) validate() error {
	switch {
	case r.OpensAt == nil:
		return invalidf("waiting_room needs opens_at")
	case r.OpensAt.Year() < 2000 || r.OpensAt.Year() > 9000:
		return invalidf("waiting_room.opens_at must be in the years 2000 to 9000")
	case r.Mode != "" && r.Mode != RoomRandom && r.Mode != RoomFIFO:
		return invalidf("waiting_room.mode must be random or fifo")
	case r.AdmitPerSecond < 0 || r.AdmitPerSecond > MaxAdmitPerSecond:
		return invalidf("waiting_room.admit_per_second must be from 0 (the configured default) to %d", MaxAdmitPerSecond)
	case r.PassTTL != 0 && (time.Duration(r.PassTTL) < MinPassTTL || time.Duration(r.PassTTL) > MaxPassTTL):
		return invalidf("waiting_room.pass_ttl must be from %s to %s", MinPassTTL, MaxPassTTL)
	case r.Overbook != 0 && !(r.Overbook >= 1 && r.Overbook <= MaxOverbook): // NaN too
		return invalidf("waiting_room.overbook must be from 1 to %d (or 0, left out, for %g)", MaxOverbook, DefaultOverbook)
	case r.PowBits < 0 || r.PowBits > MaxPowBits:
		return invalidf("waiting_room.pow_bits must be from 0 (no proof of work) to %d", MaxPowBits)
	}
	return nil
}

// settings is r with its defaults, as a SKU keeps it, without a seed:
// opens_at to the millisecond, as MySQL keeps it.
func (r *RoomSpec) settings() Room {
	out := Room{OpensAt: new(r.OpensAt.UTC().Truncate(time.Millisecond)), Mode: r.Mode, AdmitPerSecond: r.AdmitPerSecond,
		PassTTLMS: time.Duration(r.PassTTL).Milliseconds(), Overbook: r.Overbook, PowBits: r.PowBits}
	if out.Mode == "" {
		out.Mode = RoomRandom
	}
	if out.PassTTLMS == 0 {
		out.PassTTLMS = DefaultPassTTL.Milliseconds()
	}
	if out.Overbook == 0 {
		out.Overbook = DefaultOverbook
	}
	return out
}

// room is r's settings with a new secret seed, for a new SKU.
func (r *RoomSpec) room() (Room, error) {
	out := r.settings()
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return Room{}, fmt.Errorf("catalog: waiting room seed: %w", err)
	}
	out.Seed = hex.EncodeToString(seed[:])
	return out, nil
}

// same reports whether r asks for the room cur has (a seed file given
// again). Times within a millisecond are the same: MySQL keeps
// milliseconds, and may have rounded what it was given.
func (r *RoomSpec) same(cur Room) bool {
	want := r.settings()
	return cur.On() && want.OpensAt.Sub(*cur.OpensAt).Abs() < time.Millisecond && want.Mode == cur.Mode &&
		want.AdmitPerSecond == cur.AdmitPerSecond && want.PassTTLMS == cur.PassTTLMS && want.Overbook == cur.Overbook &&
		want.PowBits == cur.PowBits
}

// Room is a SKU's waiting room, as columns of table skus; OpensAt nil: the
// SKU has none.
type Room struct {
	OpensAt        *time.Time `gorm:"column:room_opens_at"`
	Mode           string     `gorm:"column:room_mode"`
	AdmitPerSecond int        `gorm:"column:room_admit_per_second"`
	PassTTLMS      int64      `gorm:"column:room_pass_ttl_ms"`
	Overbook       float64    `gorm:"column:room_overbook"`
	// PowBits is the leading zero bits of the proof of work a shopper's
	// first join needs; 0: none.
	PowBits int `gorm:"column:room_pow_bits"`
	// Seed is the draw's secret until the sale starts: 64 hex characters.
	Seed string `gorm:"column:room_seed"`
}

// On reports whether the SKU has a waiting room.
func (r Room) On() bool { return r.OpensAt != nil }

// PassTTL is how long a pass is valid.
func (r Room) PassTTL() time.Duration { return time.Duration(r.PassTTLMS) * time.Millisecond }

// SeedSHA256 is the published commitment to the seed: the hex SHA-256 of
// its 64 characters.
func (r Room) SeedSHA256() string {
	sum := sha256.Sum256([]byte(r.Seed))
	return hex.EncodeToString(sum[:])
}
