package core

import "errors"

// closers is what Open has built so far, to be undone in reverse order:
// at once when a later step fails (so a failed Open leaves nothing running
// and the store closed), or at Shutdown.
type closers []func() error

// push adds a step that can fail (closing the store, removing a directory).
func (c *closers) push(f func() error) { *c = append(*c, f) }

// pushStop adds a service's Stop, which cannot fail.
func (c *closers) pushStop(stop func()) {
	c.push(func() error { stop(); return nil })
}

// close undoes every step, last first, and forgets them: a second close does
// nothing. It returns every error joined.
func (c *closers) close() error {
	var err error
	for i := len(*c) - 1; i >= 0; i-- {
		err = errors.Join(err, (*c)[i]())
	}
	*c = nil
	return err
}
