package kv

import (
	"context"
	"sync"
)

// A Barrier lets a caller make many writes without waiting for each to be
// durable, and then wait once for all of them: each Update made with a
// context from WithBarrier returns as soon as it is applied (its result is
// known then), and Wait returns once every one of them is durable. A batch of
// a hundred completions then costs one group commit instead of a hundred
// waits. Nothing is visible to readers before it is durable either way; the
// caller must not report the writes' results before Wait returns nil.
type Barrier struct {
	mu      sync.Mutex
	pending []chan error
}

type barrierKey struct{}

// WithBarrier returns a context whose Updates join a new Barrier.
func WithBarrier(ctx context.Context) (context.Context, *Barrier) {
	b := &Barrier{}
	return context.WithValue(ctx, barrierKey{}, b), b
}

func barrierOf(ctx context.Context) *Barrier {
	b, _ := ctx.Value(barrierKey{}).(*Barrier)
	return b
}

// join registers one write and returns the channel its durability (or the
// failure to make it durable) is reported on.
func (b *Barrier) join() chan error {
	ch := make(chan error, 1)
	b.mu.Lock()
	b.pending = append(b.pending, ch)
	b.mu.Unlock()
	return ch
}

// Wait returns once every write that joined is durable (or was never
// applied; for one that failed, once the writes it read are), or the first
// error making one durable.
func (b *Barrier) Wait() error {
	b.mu.Lock()
	pending := b.pending
	b.pending = nil
	b.mu.Unlock()
	var first error
	for _, ch := range pending {
		if err := <-ch; err != nil && first == nil {
			first = err
		}
	}
	return first
}
