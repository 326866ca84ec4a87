package orderid

import (
	"math/bits"
	"strconv"
)

// An order's payment reference is what a payment provider is told to
// identify the order by (Stripe's metadata, Alipay's and WeChat Pay's
// out_trade_no): 32 characters of 0-9, A-Z and a-z, which every provider
// accepts (WeChat Pay takes 6 to 32 of [0-9A-Za-z_-|*], Alipay up to 64
// letters, digits or underscores).
//
// It is the order id written in base 62, so it is made from the id alone,
// with no store to ask, and the id is read back from it. An order id is
// its SKU (a uint64), its bucket (0 to 63) and its 24 base32 characters,
// which are exactly 15 bytes (120 bits); the reference is the 190-bit
// number
//
//	N = tail << 70 | sku << 6 | bucket
//
// in 32 base 62 digits, the most significant first. The three fields take
// bits of their own and fill them, so two ids that differ in any field give
// two numbers that differ; 62^32 > 2^190, so every number has its 32
// digits, and two numbers never share them: distinct order ids have
// distinct references. (FromReference reads every field back, so Reference
// has an inverse, which only an injective function has.) The digits are in ASCII order, so references sort as
// their numbers do: by the batch's millisecond first, as ids do after their
// SKU.

// ReferenceLen is the length of every payment reference.
const ReferenceLen = 32

// refDigits are the base 62 digits, in ASCII order.
const refDigits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Reference returns the payment reference of order id; false for a string
// that is not an order id.
func Reference(id string) (string, bool) {
	sku, bucket, _, ok := Parse(id)
	if !ok {
		return "", false
	}
	var tail [batchBytes + orderBytes]byte
	if n, err := encoding.Decode(tail[:], []byte(id[len(id)-24:])); err != nil || n != len(tail) {
		return "", false
	}
	var thi, tlo uint64 // the tail's top 56 bits and its low 64
	for _, b := range tail[:7] {
		thi = thi<<8 | uint64(b)
	}
	for _, b := range tail[7:] {
		tlo = tlo<<8 | uint64(b)
	}
	hi := thi<<6 | tlo>>58
	mid := tlo<<6 | sku>>58
	lo := sku<<6 | uint64(bucket) //nolint:gosec // Parse gives a bucket from 0 to MaxBucket
	var out [ReferenceLen]byte
	for i := ReferenceLen - 1; i >= 0; i-- {
		var r uint64
		hi, r = bits.Div64(0, hi, 62)
		mid, r = bits.Div64(r, mid, 62)
		lo, r = bits.Div64(r, lo, 62)
		out[i] = refDigits[r]
	}
	return string(out[:]), true
}

// FromReference returns the order id whose payment reference is ref; false
// for a string that is no order's reference.
func FromReference(ref string) (string, bool) {
	if len(ref) != ReferenceLen {
		return "", false
	}
	var hi, mid, lo uint64
	for i := 0; i < len(ref); i++ {
		d := refDigit(ref[i])
		if d < 0 {
			return "", false
		}
		// N = N*62 + d on three 64-bit words; 32 digits stay below 2^191.
		var c, c2 uint64
		c, lo = bits.Mul64(lo, 62)
		lo, c2 = bits.Add64(lo, uint64(d), 0)
		c += c2
		var cm uint64
		cm, mid = bits.Mul64(mid, 62)
		mid, c2 = bits.Add64(mid, c, 0)
		cm += c2
		hi = hi*62 + cm
	}
	if hi>>62 != 0 {
		return "", false // 2^190 or more: no order id's number
	}
	bucket := int(lo & 63)
	sku := lo>>6 | mid<<58
	tlo := mid>>6 | hi<<58
	thi := hi >> 6
	if sku == 0 {
		return "", false
	}
	var tail [batchBytes + orderBytes]byte
	for i := 6; i >= 0; i-- {
		tail[i] = byte(thi)
		thi >>= 8
	}
	for i := 14; i >= 7; i-- {
		tail[i] = byte(tlo)
		tlo >>= 8
	}
	head := strconv.FormatUint(sku, 10)
	if bucket > 0 {
		head += "." + strconv.Itoa(bucket)
	}
	return head + "-" + encoding.EncodeToString(tail[:]), true
}

// refDigit is the value of base 62 digit c, -1 for another byte.
func refDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 36
	}
	return -1
}
