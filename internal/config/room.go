package config

// Room configures the waiting rooms of the SKUs that have one
// (internal/room).
type Room struct {
	// PassKeys sign the waiting room passes (HMAC-SHA256), comma-separated,
	// each at least 32 characters: the first signs, every one verifies, so
	// a key is rotated by putting the new one first and dropping the old a
	// pass lifetime later. Every instance needs the same keys. Empty: each
	// process makes a random key at start, which only a single instance
	// can use.
	PassKeys string `mapstructure:"pass_keys"`
	// AdmitPerSecond is the least admission rate of a room created with
	// admit_per_second 0, which admits at twice the backend's measured
	// pace (internal/pace).
	AdmitPerSecond int `mapstructure:"admit_per_second"`
	// Streams bounds the shoppers' streams of their room statuses
	// (GET /api/v1/skus/{id}/queue/events) open on one instance; a stream
	// past it is refused (429 too_many_streams) and its shopper polls.
	Streams int `mapstructure:"streams"`
}

// Keys returns the pass keys, the signing one first.
func (r Room) Keys() []string { return splitList(r.PassKeys) }

func (r Room) validate() error {
	for _, k := range r.Keys() {
		if len(k) < 32 {
			return &Error{Key: "room.pass_keys", Allowed: "keys of at least 32 characters, comma-separated"}
		}
	}
	if err := between("room.admit_per_second", int64(r.AdmitPerSecond), 1, 100_000); err != nil {
		return err
	}
	return between("room.streams", int64(r.Streams), 1, 1_000_000)
}
