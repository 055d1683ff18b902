package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Throttle is why a claim of a queue's next nodes handed out nothing because
// of flow control: the server answered 204 with a Tether-Throttled header
// (`<reason>; key="<key>"`) and says when to come back.
type Throttle struct {
	// Reason is concurrency_limited, start_rate_limited or budget_exhausted.
	Reason ProblemCode
	// Key is the concurrency key (or queue) whose limit, rate or budget held
	// the claim back.
	Key string
	// RetryAfter is when a claim may succeed again (Tether-Retry-After-Ms,
	// else Retry-After); 0 when the server did not say.
	RetryAfter time.Duration
}

// ThrottleOf is the flow control that emptied a claim's answer, read from
// its headers; nil when the answer carries none (the queue had nothing
// ready).
func ThrottleOf(resp *http.Response) *Throttle {
	if resp == nil {
		return nil
	}
	v := resp.Header.Get("Tether-Throttled")
	if v == "" {
		return nil
	}
	reason, params, _ := strings.Cut(v, ";")
	return &Throttle{
		Reason:     ProblemCode(strings.TrimSpace(reason)),
		Key:        throttleKey(params),
		RetryAfter: RetryAfter(resp),
	}
}

// throttleKey is the key parameter of a Tether-Throttled value (`key="..."`,
// a quoted string in which a backslash escapes the next byte and a byte
// past ASCII is sent as %XX); "" without one.
func throttleKey(params string) string {
	i := strings.Index(params, `key="`)
	if i < 0 {
		return ""
	}
	var b strings.Builder
	rest := params[i+len(`key="`):]
	for j := 0; j < len(rest); j++ {
		switch c := rest[j]; c {
		case '\\':
			if j+1 < len(rest) {
				j++
				b.WriteByte(rest[j])
			}
		case '"':
			return b.String()
		case '%':
			if j+2 < len(rest) {
				if v, err := strconv.ParseUint(rest[j+1:j+3], 16, 8); err == nil && v >= 0x80 {
					b.WriteByte(byte(v))
					j += 2
					continue
				}
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// RetryAfter is how long an answer asks its caller to wait before trying
// again: Tether-Retry-After-Ms when the server sent it (to the
// millisecond), else Retry-After (delta seconds or an HTTP date); 0 when it
// sent neither.
func RetryAfter(resp *http.Response) time.Duration { return retryAfter(resp, time.Now()) }

// retryAfterMs is the Tether-Retry-After-Ms of an answer; false without a
// usable one.
func retryAfterMs(resp *http.Response) (time.Duration, bool) {
	v := resp.Header.Get("Tether-Retry-After-Ms")
	if v == "" {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}
