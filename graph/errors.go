package graph

import (
	"errors"
	"fmt"

	"github.com/tether-run/tether/internal/fault"
)

// ErrNotFound is matched (errors.Is) by every error that means the node
// asked for does not exist in the tenant.
var ErrNotFound = errors.New("not found")

// ErrInvalid is matched by every error that means an argument breaks a rule
// (a malformed id, a cursor of another list).
var ErrInvalid = errors.New("invalid argument")

// translate maps the store's errors to this package's: the one place they
// are told apart.
func translate(err error) error {
	var nf *fault.NotFound
	var inv *fault.Invalid
	switch {
	case err == nil:
		return nil
	case errors.As(err, &nf):
		return fmt.Errorf("%w: %s", ErrNotFound, nf)
	case errors.As(err, &inv):
		return fmt.Errorf("%w: %s", ErrInvalid, inv)
	}
	return err
}
