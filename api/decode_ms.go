package api

import (
	"reflect"
	"strconv"
	"sync"

	"github.com/tether-run/tether/internal/duration"
	"github.com/tether-run/tether/internal/fault"
)

// checkDurations holds every millisecond field of a decoded body (a member
// named ms or ending in _ms, of an integer type, at any depth of structs,
// pointers and slices) to its range in the duration package. decodeStrict
// calls it, so a handler that decodes with decodeStrict never sees a
// duration out of range, however deep the field sits (batch items, a
// backoff, a template). Free-form values (maps, json.RawMessage) hold no
// fields and are not looked into.
func checkDurations(v any) error {
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			return nil
		}
		rv = rv.Elem()
	}
	if rv.Kind() != reflect.Struct {
		return nil
	}
	p := msPlanOf(rv.Type())
	if p == nil {
		return nil
	}
	return p.check(rv)
}

// msPlan says where the millisecond fields of one struct type are.
type msPlan struct {
	fields []msField  // millisecond fields
	nested []msNested // structs, pointers and slices that hold some
}

type msField struct {
	index []int // for FieldByIndex, through embedded structs
	name  string
}

type msNested struct {
	index []int
	name  string
	plan  *msPlan // of the struct inside
}

// msPlans caches an msPlan (nil: nothing to check) per struct type. Like
// encoding/json's own field cache it only ever holds what a type says, so
// sharing it is safe.
var msPlans sync.Map // reflect.Type → *msPlan

func msPlanOf(t reflect.Type) *msPlan {
	if p, ok := msPlans.Load(t); ok {
		return p.(*msPlan)
	}
	p := buildMSPlan(t, map[reflect.Type]bool{})
	msPlans.Store(t, p)
	return p
}

func buildMSPlan(t reflect.Type, building map[reflect.Type]bool) *msPlan {
	if building[t] {
		return nil // a recursive type: its fields are planned where it started
	}
	building[t] = true
	defer delete(building, t)
	p := &msPlan{}
	addMSFields(p, t, building)
	if len(p.fields) == 0 && len(p.nested) == 0 {
		return nil
	}
	return p
}

func addMSFields(p *msPlan, t reflect.Type, building map[reflect.Type]bool) {
	jsonFields(t, func(name string, f reflect.StructField, index []int) {
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if duration.IsField(name) && isIntKind(ft.Kind()) {
			p.fields = append(p.fields, msField{index: index, name: name})
			return
		}
		if ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array {
			ft = ft.Elem()
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
		}
		if ft.Kind() == reflect.Struct {
			if inner := buildMSPlan(ft, building); inner != nil {
				p.nested = append(p.nested, msNested{index: index, name: name, plan: inner})
			}
		}
	})
}

func isIntKind(k reflect.Kind) bool {
	return k >= reflect.Int && k <= reflect.Int64 || k >= reflect.Uint && k <= reflect.Uint64
}

func (p *msPlan) check(v reflect.Value) error {
	for _, f := range p.fields {
		fv := v.FieldByIndex(f.index)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				continue
			}
			fv = fv.Elem()
		}
		n, ok := intValue(fv)
		r := duration.Of(f.name)
		if !ok || n < r.Min || n > r.Max {
			return r.Invalid(f.name)
		}
	}
	for _, nd := range p.nested {
		fv := v.FieldByIndex(nd.index)
		if err := nd.plan.checkValue(fv); err != nil {
			return prefixField(err, nd.name)
		}
	}
	return nil
}

// checkValue checks a struct, a pointer to one, or a slice of either.
func (p *msPlan) checkValue(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return p.checkValue(v.Elem())
	case reflect.Struct:
		return p.check(v)
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := p.checkValue(v.Index(i)); err != nil {
				return prefixField(err, "["+strconv.Itoa(i)+"]")
			}
		}
	}
	return nil
}

func intValue(v reflect.Value) (int64, bool) {
	switch {
	case v.CanInt():
		return v.Int(), true
	case v.CanUint():
		u := v.Uint()
		return int64(u), u <= 1<<63-1
	}
	return 0, false
}

// prefixField puts the path element elem before the field an Invalid names.
func prefixField(err error, elem string) error {
	inv, ok := err.(*fault.Invalid)
	if !ok {
		return err
	}
	switch {
	case inv.Field == "":
		inv.Field = elem
	case inv.Field[0] == '[':
		inv.Field = elem + inv.Field
	default:
		inv.Field = elem + "." + inv.Field
	}
	return inv
}
