package api

import (
	"encoding/json"
	"strconv"
)

// The bodies of the hot lease calls (claim, claim-next, renew, complete,
// and their batch ops) are mostly a fence, a session and a TTL. decodeStrict
// fills them on a fast path without encoding/json's decoder when every
// member is one it reads here: a key spelled exactly as its field's tag and
// a plain value (an integer for an integer field, a string without escapes
// for a string field, any value but null for a result). Anything else (a key
// in another case, null, a fraction, an escape, an unknown or another field)
// leaves the body to encoding/json, which decides and words the error, so
// either path gives the same value or the same error.

// fastBody is a body type with a fast path: set takes one member and
// reports whether it could.
type fastBody interface {
	set(key string, val []byte) bool
}

// decodeFast fills v from the object b (which checkJSON passed) and
// reports whether every member took the fast path. On false v may be
// partly filled; the caller starts again from the zero value.
func decodeFast(b []byte, v fastBody) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for i < len(b) {
		if b[i] != '"' {
			return false
		}
		end := i + 1
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' {
				return false
			}
			end++
		}
		if end >= len(b) {
			return false
		}
		key := b[i+1 : end]
		i = skipSpace(b, end+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		start := skipSpace(b, i+1)
		stop := skipValue(b, start)
		if stop < 0 || !v.set(string(key), b[start:stop]) {
			return false
		}
		i = skipSpace(b, stop)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		return i < len(b) && b[i] == '}' && skipSpace(b, i+1) == len(b)
	}
	return false
}

// fastInt64 is an integer literal as an *int64 (nil, false otherwise).
func fastInt64(val []byte) (*int64, bool) {
	if len(val) == 0 || val[0] != '-' && (val[0] < '0' || val[0] > '9') {
		return nil, false
	}
	n, err := strconv.ParseInt(string(val), 10, 64)
	if err != nil {
		return nil, false
	}
	return &n, true
}

// fastString is a string literal without escapes.
func fastString(val []byte) (string, bool) {
	return plainString(val)
}

func (b *holderBody) set(key string, val []byte) (ok bool) {
	switch key {
	case "session":
		b.Session, ok = fastString(val)
	case "fence":
		b.Fence, ok = fastInt64(val)
	}
	return ok
}

func (b *completeBody) set(key string, val []byte) bool {
	switch key {
	case "result":
		if len(val) == 0 || string(val) == "null" {
			return false
		}
		b.Result = json.RawMessage(string(val))
		return true
	case "next":
		var next nextClaimBody
		if !decodeFast(val, &next) {
			return false
		}
		b.Next = &next
		return true
	}
	return b.holderBody.set(key, val)
}

func (b *claimBody) set(key string, val []byte) (ok bool) {
	switch key {
	case "session":
		b.Session, ok = fastString(val)
	case "ttl_ms":
		b.TTLMS, ok = fastInt64(val)
	}
	return ok
}

func (b *claimFields) set(key string, val []byte) (ok bool) {
	switch key {
	case "session":
		b.Session, ok = fastString(val)
	case "ttl_ms":
		b.TTLMS, ok = fastInt64(val)
	case "wait_ms":
		b.WaitMS, ok = fastInt64(val)
	}
	return ok
}

func (b *claimNextBody) set(key string, val []byte) bool {
	if key != "max" {
		return b.claimFields.set(key, val)
	}
	n, ok := fastInt64(val)
	if !ok || int64(int(*n)) != *n {
		return false
	}
	m := int(*n)
	b.Max = &m
	return true
}

func (b *nextClaimBody) set(key string, val []byte) (ok bool) {
	if key != "queue" {
		return b.claimFields.set(key, val)
	}
	b.Queue, ok = fastString(val)
	return ok
}
