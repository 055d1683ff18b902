package client

import (
	"bytes"
	"encoding/json"
)

// Nullable is a member of a JSON merge patch (RFC 7396), which has three
// states a pointer cannot express: absent (the zero Nullable, left out of the
// JSON and so left unchanged), null (cleared, or put back to the server
// default), or a value.
type Nullable[T any] struct {
	value T
	state nullableState
}

type nullableState uint8

const (
	nullableAbsent nullableState = iota
	nullableNull
	nullableSet
)

// Value is a Nullable holding v.
func Value[T any](v T) Nullable[T] { return Nullable[T]{value: v, state: nullableSet} }

// Null is an explicit JSON null.
func Null[T any]() Nullable[T] { return Nullable[T]{state: nullableNull} }

// IsZero reports whether n is absent; the generated structs tag Nullable
// members `omitzero`, so an absent member is left out of the JSON.
func (n Nullable[T]) IsZero() bool { return n.state == nullableAbsent }

// IsNull reports whether n is an explicit null.
func (n Nullable[T]) IsNull() bool { return n.state == nullableNull }

// Get returns the value and whether there is one.
func (n Nullable[T]) Get() (T, bool) { return n.value, n.state == nullableSet }

// MarshalJSON encodes a value, or null when there is none.
func (n Nullable[T]) MarshalJSON() ([]byte, error) {
	if n.state != nullableSet {
		return []byte("null"), nil
	}
	return json.Marshal(n.value)
}

// UnmarshalJSON decodes null or a value.
func (n *Nullable[T]) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*n = Null[T]()
		return nil
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*n = Value(v)
	return nil
}
