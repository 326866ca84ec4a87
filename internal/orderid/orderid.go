// Package orderid makes and reads order ids. An order id names its SKU and
// the batch it was accepted in: the orders a buy script accepts together are
// one task in their SKU's queue, and the task's id is the batch part of each
// order's id, so a queued order is found from its id alone.
//
// An id is "<sku>-<24 characters>", or "<sku>.<bucket>-<24 characters>" for
// an order taken from bucket 1 to 63 of a SKU whose stock is split (bucket 0
// is not written): 15 bytes in a lower-case base32 — the batch's 6-byte
// millisecond time and 4 random bytes, then the order's 2-byte index in its
// batch and 3 random bytes. Ids are unique, roughly time-ordered and not
// guessable; the batch id is the id up to the first 16 characters after the
// dash.
package orderid

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strconv"
	"strings"
	"time"
)

var encoding = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

const (
	batchBytes = 10
	orderBytes = 5
	// MaxLen is the longest order id: a 20-digit SKU, a 2-digit bucket, a
	// dot, a dash and 24 characters.
	MaxLen = 48
	// MaxBucket is the highest bucket an id can name.
	MaxBucket = 63
	// MaxBatch is the most orders one batch can name.
	MaxBatch = 1 << 16
)

// Batch makes the ids of one batch's orders.
type Batch struct {
	pfx  string // "<sku>-" or "<sku>.<bucket>-"
	head [batchBytes]byte
	tail []byte // the random part of each order's id, 3 bytes per order
	id   string
}

// NewBatch starts a batch of at most n of sku's orders taken from bucket
// (0 to MaxBucket) at now (1 <= n <= MaxBatch). Its random bytes are read
// at once, so making an order's id reads none.
func NewBatch(sku uint64, bucket int, now time.Time, n int) *Batch {
	n = min(max(n, 1), MaxBatch)
	pfx := strconv.FormatUint(sku, 10)
	if bucket > 0 {
		pfx += "." + strconv.Itoa(bucket%(MaxBucket+1))
	}
	b := &Batch{pfx: pfx + "-"}
	ms := uint64(now.UnixMilli())
	for i := 5; i >= 0; i-- {
		b.head[i] = byte(ms)
		ms >>= 8
	}
	random := make([]byte, 4+3*n)
	_, _ = rand.Read(random)
	copy(b.head[6:], random[:4])
	b.tail = random[4:]
	b.id = b.pfx + encoding.EncodeToString(b.head[:])
	return b
}

// ID is the batch's id: the id of its task in the SKU's queue.
func (b *Batch) ID() string { return b.id }

// Order returns the id of the batch's i-th order (0 <= i < n).
func (b *Batch) Order(i int) string {
	var raw [batchBytes + orderBytes]byte
	copy(raw[:], b.head[:])
	binary.BigEndian.PutUint16(raw[batchBytes:], uint16(i%MaxBatch)) //nolint:gosec // i%MaxBatch fits in 16 bits
	copy(raw[batchBytes+2:], b.tail[3*i:3*i+3])
	return b.pfx + encoding.EncodeToString(raw[:])
}

// Parse returns the SKU, the bucket and the batch id an order id names;
// false for a string that is not an order id.
func Parse(id string) (sku uint64, bucket int, batch string, ok bool) {
	i := strings.IndexByte(id, '-')
	if i <= 0 || len(id) > MaxLen || len(id)-i-1 != 24 {
		return 0, 0, "", false
	}
	for _, c := range id[i+1:] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z') {
			return 0, 0, "", false
		}
	}
	sku, bucket, ok = ParseHead(id[:i])
	if !ok {
		return 0, 0, "", false
	}
	return sku, bucket, id[:i+1+16], true
}

// ParseHead reads the part of an order id before its dash: "<sku>" or
// "<sku>.<bucket>".
func ParseHead(head string) (sku uint64, bucket int, ok bool) {
	if dot := strings.IndexByte(head, '.'); dot >= 0 {
		b := head[dot+1:]
		n, err := strconv.Atoi(b)
		if err != nil || n < 1 || n > MaxBucket || strconv.Itoa(n) != b {
			return 0, 0, false
		}
		bucket, head = n, head[:dot]
	}
	sku, err := strconv.ParseUint(head, 10, 64)
	if err != nil || sku == 0 || strconv.FormatUint(sku, 10) != head {
		return 0, 0, false
	}
	return sku, bucket, true
}

// Made returns when the batch of an order id was made (to the
// millisecond); false for a string that is not an order id.
func Made(id string) (time.Time, bool) {
	if _, _, _, ok := Parse(id); !ok {
		return time.Time{}, false
	}
	raw, err := encoding.DecodeString(id[strings.IndexByte(id, '-')+1:])
	if err != nil {
		return time.Time{}, false
	}
	var ms uint64
	for _, b := range raw[:6] {
		ms = ms<<8 | uint64(b)
	}
	return time.UnixMilli(int64(ms)), true //nolint:gosec // 48 bits
}
