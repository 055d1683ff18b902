package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/tether-run/tether/internal/fault"
)

// encoding/json matches an object key to a struct field without regard to
// case ("TTL_MS" fills ttl_ms), and DisallowUnknownFields does not object.
// The API's field names are exact: checkKeyCase refuses a key that only a
// case-insensitive match accepted, naming the field it meant, so a body is
// read the same by this server and by any strict reader. It runs only after
// encoding/json has decoded the body (decodeStrict's slow path); the fast
// path matches keys exactly already.

// checkKeyCase walks body (valid JSON that decoded into v) along v's type.
// The API's names are lower case, so only a body with an upper-case or
// non-ASCII byte can hold a key that differs from one by case alone.
func checkKeyCase(body []byte, v any) error {
	if !mayFoldCase(body) {
		return nil
	}
	return keyCase(body, reflect.TypeOf(v), "")
}

func mayFoldCase(b []byte) bool {
	for _, c := range b {
		if 'A' <= c && c <= 'Z' || c >= 0x80 {
			return true
		}
	}
	return false
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// keyCase checks the keys of raw, a value of type t, and of what it holds,
// reading one level at a time (a value the type does not look into, such as
// props or a json.RawMessage, is never taken apart).
func keyCase(raw json.RawMessage, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || !holdsStruct(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil // null, or decodeStrict has answered already
		}
		fields := fieldsOf(t)
		for k, v := range obj {
			if f, ok := fields[k]; ok {
				if err := keyCase(v, f, joinPath(path, k)); err != nil {
					return err
				}
				continue
			}
			for name := range fields {
				if strings.EqualFold(k, name) { // encoding/json's match
					return fault.Invalidf(joinPath(path, k), "unknown field (field names are case-sensitive: %q)", name)
				}
			}
		}
	case reflect.Slice, reflect.Array:
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return nil
		}
		for i, v := range arr {
			if err := keyCase(v, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		for k, v := range obj {
			if err := keyCase(v, t.Elem(), joinPath(path, k)); err != nil {
				return err
			}
		}
	}
	return nil
}

// holdsStruct reports whether a value of type t can hold a struct that
// encoding/json fills by name (only those have keys to check).
func holdsStruct(t reflect.Type) bool {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			return !reflect.PointerTo(t).Implements(unmarshalerType)
		default:
			return false
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var fieldCache sync.Map // reflect.Type -> map[string]reflect.Type

// fieldsOf maps the JSON names of struct type t's fields to their types.
func fieldsOf(t reflect.Type) map[string]reflect.Type {
	if f, ok := fieldCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f := map[string]reflect.Type{}
	jsonFields(t, func(name string, sf reflect.StructField, _ []int) {
		if _, ok := f[name]; !ok {
			f[name] = sf.Type
		}
	})
	fieldCache.Store(t, f)
	return f
}
