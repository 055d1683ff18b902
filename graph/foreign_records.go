package graph

import (
	"encoding/json"
	"fmt"
)

// Records whose shape another package owns (tenant, API key and worker
// records) are stored as that package's JSON: they are small, rarely
// written, and never on a hot path.

func (tx *Tx) getJSON(key []byte, v any) (bool, error) {
	b, ok, err := tx.kv.Get(key)
	if err != nil || !ok {
		return ok, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("error decoding %q: %w", key, err)
	}
	return true, nil
}

func (tx *Tx) setJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.kv.Set(key, b)
}
