package api

import (
	"reflect"
	"slices"
	"strings"
)

// jsonFields calls fn with each field of struct type t as encoding/json
// names it: the name in the json tag, else the Go name; "-" and unexported
// fields left out; the fields of an embedded struct without a name of its
// own promoted as if they were t's. index is the field's path from t, for
// FieldByIndex.
func jsonFields(t reflect.Type, fn func(name string, f reflect.StructField, index []int)) {
	jsonFieldsUnder(t, nil, fn)
}

func jsonFieldsUnder(t reflect.Type, prefix []int, fn func(string, reflect.StructField, []int)) {
	for i := range t.NumField() {
		f := t.Field(i)
		index := append(slices.Clone(prefix), i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			jsonFieldsUnder(f.Type, index, fn) // promoted fields
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fn(name, f, index)
	}
}
