package intake

import (
	"context"
	"fmt"
	"time"
)

// relistenDelay is the wait before the listener connects again after it
// lost its connection; polling covers the gap.
const relistenDelay = time.Second

// listen keeps a connection of its own LISTENing on the schema's channel
// and pokes the loop on every notification, until ctx ends. Where LISTEN
// fails (CockroachDB has none) it says so once and leaves the work to
// polling; a connection lost after listening is logged each time.
func (c *Consumer) listen(ctx context.Context) {
	warned := false
	for {
		listened, err := c.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case listened:
			c.cfg.Logger.Warn("intake: lost the connection listening for notifications; polling until it is back", "error", err)
		case !warned:
			c.cfg.Logger.Warn("intake: not listening for notifications; polling every PollInterval", "error", err, "poll_interval", c.cfg.PollInterval)
			warned = true
		}
		t := time.NewTimer(relistenDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// listenOnce listens on one connection until it fails or ctx ends; listened
// says whether LISTEN took.
func (c *Consumer) listenOnce(ctx context.Context) (listened bool, err error) {
	pc, err := c.cfg.Pool.Acquire(ctx)
	if err != nil {
		return false, fmt.Errorf("error connecting to listen: %w", err)
	}
	conn := pc.Hijack() // its own: it waits on notifications, not in the pool
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+c.sql.channel); err != nil {
		return false, fmt.Errorf("error listening: %w", err)
	}
	c.TestSignals.Listening.Signal(struct{}{})
	c.poke() // a row that committed before LISTEN sent no notification here
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return true, fmt.Errorf("error waiting for a notification: %w", err)
		}
		c.poke()
	}
}
