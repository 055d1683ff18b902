package message

import "sync"

// hub wakes inbox long polls of a tenant once a message to it is durable.
// A wake-up is a hint: the poll reads its inbox again and waits again when
// the message was for someone else.
type hub struct {
	mu      sync.Mutex
	waiters map[string]chan struct{}
}

func newHub() *hub { return &hub{waiters: map[string]chan struct{}{}} }

func (h *hub) publish(tenant string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.waiters[tenant]; ok {
		close(ch)
		delete(h.waiters, tenant)
	}
}

// changed returns a channel closed once the next message of tenant is durable.
func (h *hub) changed(tenant string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, ok := h.waiters[tenant]
	if !ok {
		ch = make(chan struct{})
		h.waiters[tenant] = ch
	}
	return ch
}
