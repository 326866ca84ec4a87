package catalog

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSpecValidate(t *testing.T) {
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	good := Spec{Name: " Phone ", PriceCents: 100, Stock: 10, PerUserLimit: 1, StartsAt: start, EndsAt: start.Add(time.Hour)}
	s := good
	assert.NoError(t, s.Validate())
	assert.Equal(t, "Phone", s.Name, "trimmed")
	s.ID = MaxID
	assert.NoError(t, s.Validate(), "the largest id")
	for _, n := range []int{0, 1, MaxBuckets} {
		s := good
		s.Buckets = n
		assert.NoError(t, s.Validate(), "buckets %d", n)
		assert.Equal(t, n, s.Buckets, "0 stays 0 (not given): the store decides what it means")
	}

	for name, mutate := range map[string]func(*Spec){
		"no name":       func(s *Spec) { s.Name = "  " },
		"long name":     func(s *Spec) { s.Name = strings.Repeat("x", MaxNameLen+1) },
		"bad utf8":      func(s *Spec) { s.Name = "\xff" },
		"neg price":     func(s *Spec) { s.PriceCents = -1 },
		"neg stock":     func(s *Spec) { s.Stock = -1 },
		"huge stock":    func(s *Spec) { s.Stock = MaxStock + 1 },
		"zero limit":    func(s *Spec) { s.PerUserLimit = 0 },
		"huge limit":    func(s *Spec) { s.PerUserLimit = MaxPerUserLimit + 1 },
		"neg buckets":   func(s *Spec) { s.Buckets = -1 },
		"huge buckets":  func(s *Spec) { s.Buckets = MaxBuckets + 1 },
		"no start":      func(s *Spec) { s.StartsAt = time.Time{} },
		"end <= start":  func(s *Spec) { s.EndsAt = s.StartsAt },
		"ancient start": func(s *Spec) { s.StartsAt = time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC) },
		"id above max":  func(s *Spec) { s.ID = MaxID + 1 },
		"max uint64 id": func(s *Spec) { s.ID = 1<<64 - 1 },
	} {
		s := good
		mutate(&s)
		err := s.Validate()
		assert.True(t, errors.Is(err, ErrInvalid), "%s: %v", name, err)
	}
	s = good
	s.Buckets = MaxBuckets + 1
	assert.EqualError(t, s.Validate(), "invalid sku: buckets must be from 1 to 64")
}

func TestCheckBuckets(t *testing.T) {
	sku := &SKU{ID: 7, Buckets: 4}
	assert.NoError(t, sku.CheckBuckets(0), "not given keeps the count")
	assert.NoError(t, sku.CheckBuckets(4))
	err := sku.CheckBuckets(8)
	assert.True(t, errors.Is(err, ErrBucketsFixed), "%v", err)
	assert.ErrorContains(t, err, "sku 7 has 4, asked for 8")
}

func TestState(t *testing.T) {
	start := time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	s := &SKU{StartsAt: start, EndsAt: start.Add(time.Hour)}
	assert.Equal(t, Upcoming, s.State(start.Add(-time.Second), 5))
	assert.Equal(t, Live, s.State(start, 5))
	assert.Equal(t, SoldOut, s.State(start, 0))
	assert.Equal(t, Ended, s.State(start.Add(time.Hour), 5))
}
