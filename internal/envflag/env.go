package envflag

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// String is the variable name's value, or def when it is unset or empty.
func String(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

// Int is the variable name's value as a non-negative integer, or def when
// it is unset or empty; any other value is an error that names the variable.
func Int(name string, def int64) (int64, error) {
	v, ok := os.LookupEnv(name)
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s must be a non-negative integer, not %q", name, v)
	}
	return n, nil
}

// List reads a comma separated list from each of the variables named that
// is set, in order, dropping empty items.
func List(names ...string) []string {
	var out []string
	for _, name := range names {
		out = append(out, Split(os.Getenv(name))...)
	}
	return out
}

// Split splits a comma separated list, dropping empty items.
func Split(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if p := strings.TrimSpace(part); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// Or is a flag's value when it was given (not empty), else fallback.
func Or(flag, fallback string) string {
	if flag != "" {
		return flag
	}
	return fallback
}
