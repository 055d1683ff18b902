package memlimit

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// units are the suffixes a size may carry: GOMEMLIMIT's (B, KiB, MiB, GiB,
// TiB), so that a value moves between the two variables unchanged.
var units = []struct {
	suffix string
	bytes  int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1},
}

// ParseSize reads a byte count: digits with an optional unit (B, KiB, MiB,
// GiB, TiB; a fraction such as 1.5GiB is allowed with a unit). "off" is 0.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, "off") {
		return 0, nil
	}
	num, mult := s, int64(1)
	for _, u := range units {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = strings.TrimSpace(rest), u.bytes
			break
		}
	}
	if num == "" || strings.ContainsAny(num, "+-eE") {
		return 0, fmt.Errorf("%q is not a size: want bytes or a number with B, KiB, MiB, GiB or TiB (e.g. 2GiB), or off", s)
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("%q is too large", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 1 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("%q is not a size: want bytes or a number with B, KiB, MiB, GiB or TiB (e.g. 2GiB), or off", s)
	}
	if f*float64(mult) >= math.MaxInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(f * float64(mult)), nil
}

// FormatSize writes n in the largest binary unit that keeps it readable
// (e.g. 1.50GiB), for logs.
func FormatSize(n int64) string {
	for i := len(units) - 2; i >= 0; i-- {
		if u := units[i]; n >= u.bytes {
			return strconv.FormatFloat(float64(n)/float64(u.bytes), 'f', 2, 64) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
