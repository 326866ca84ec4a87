package httpapi

// parsePlaceFast reads the common shape of a buy body — one object with the
// keys sku_id, qty, request_id and pass at most once each, plain integers
// and a request id and pass of printable ASCII without escapes — without
// reflection. It
// reports false for anything else, and the caller then decodes with
// decodeStrict, which accepts the same bodies with the same result and
// explains what is wrong with the others.
func parsePlaceFast(b []byte, req *placeRequest) bool {
	var r placeRequest
	var seen [4]bool
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			if i >= len(b) || b[i] != '"' {
				return false
			}
			j := i + 1
			for j < len(b) && b[j] != '"' {
				j++
			}
			if j >= len(b) {
				return false
			}
			key := b[i+1 : j]
			i = skipSpace(b, j+1)
			if i >= len(b) || b[i] != ':' {
				return false
			}
			i = skipSpace(b, i+1)
			var ok bool
			switch string(key) {
			case "sku_id":
				if seen[0] {
					return false
				}
				seen[0] = true
				var n int64
				n, i, ok = parseInt(b, i, false)
				r.SKU = uint64(n) //nolint:gosec // parseInt(…, false) takes no sign: n >= 0
			case "qty":
				if seen[1] {
					return false
				}
				seen[1] = true
				var n int64
				n, i, ok = parseInt(b, i, true)
				r.Qty = int(n)
			case "request_id":
				if seen[2] {
					return false
				}
				seen[2] = true
				r.RequestID, i, ok = parsePlainString(b, i)
			case "pass":
				if seen[3] {
					return false
				}
				seen[3] = true
				r.Pass, i, ok = parsePlainString(b, i)
			}
			if !ok {
				return false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return false
			}
			if b[i] == '}' {
				i++
				break
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
		}
	}
	if skipSpace(b, i) != len(b) {
		return false
	}
	*req = r
	return true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// parseInt reads a JSON integer of at most 18 digits (so it cannot
// overflow), with a minus sign only when signed.
func parseInt(b []byte, i int, signed bool) (int64, int, bool) {
	neg := false
	if signed && i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || digits > 1 && b[start] == '0' {
		return 0, i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, i, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// parsePlainString reads a JSON string of printable ASCII with no escapes.
func parsePlainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	j := i + 1
	for ; j < len(b) && b[j] != '"'; j++ {
		if c := b[j]; c < 0x20 || c > 0x7e || c == '\\' {
			return "", j, false
		}
	}
	if j >= len(b) {
		return "", j, false
	}
	return string(b[i+1 : j]), j + 1, true
}
