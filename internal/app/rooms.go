package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/seckill/seckill/internal/httpapi"
	"github.com/seckill/seckill/internal/replica"
	"github.com/seckill/seckill/internal/room"
)

// buildRooms makes the waiting rooms, with the configured pass keys or,
// when none is set, a random key of this process (passes it signs are
// refused by any other: fine for one instance, the embedded quick start;
// the API warns of it, the one part that signs and checks passes).
func (a *App) buildRooms(replicas *replica.Waiter) error {
	keys := a.Cfg.Room.Keys()
	if len(keys) == 0 {
		var b [32]byte
		_, _ = rand.Read(b[:])
		keys = []string{hex.EncodeToString(b[:])}
	}
	signer, err := room.NewSigner(keys)
	if err != nil {
		return err
	}
	a.Rooms = room.New(a.cache, a.Redis, replicas, signer, room.Options{
		Prefix:         a.Cfg.Redis.KeyPrefix,
		AdmitPerSecond: a.Cfg.Room.AdmitPerSecond,
		Pace:           a.Pace,
		Metrics:        room.NewMetrics(a.Registry),
		// a.Sales, built next (it audits the rooms), by the time a
		// shopper visits.
		OnStateLost: func(sku uint64) { a.Sales.OnStateLost(sku) },
	})
	return nil
}

// roomStreams serves the shoppers' room streams from the board's copies
// of the rooms.
type roomStreams struct{ b *room.Board }

func (r roomStreams) Follow(ctx context.Context, sku uint64, user string) (httpapi.Follower, error) {
	f, err := r.b.Follow(ctx, sku, user)
	if err != nil {
		return nil, err
	}
	return f, nil
}
