package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// slowDecode is decodeStrict's decoding without its fast path.
func slowDecode[T any](b []byte) (T, error) {
	var v T
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	err := dec.Decode(&v)
	return v, err
}

// FuzzDecodeFast holds the fast path of the hot bodies to encoding/json's
// decoder: when it takes a body, the values are the same.
func FuzzDecodeFast(f *testing.F) {
	for _, s := range []string{
		`{"fence":3}`, `{"session":"s","fence":-7}`, `{"fence":1.5}`, `{"fence":1e3}`, `{"FENCE":2}`,
		`{"fence":null}`, `{"result":{"ok":true},"fence":9}`, `{"result":null}`, `{"result":"x"}`,
		`{"ttl_ms":60000,"wait_ms":0,"max":100}`, `{"session":"a\"b"}`, `{"max":99999999999999999999}`,
		`{}`, ` { "fence" : 12 } `, `{"usage":{"t":1}}`, `{"types":["a"]}`, `{"fence":"3"}`,
		`{"fence":3,"next":{"queue":"q","wait_ms":5,"ttl_ms":9}}`, `{"next":{"queue":"q","max":1}}`, `{"next":null}`,
		`{"next":{}}`, `{"next":{"queue":"q","types":["t"]}}`, `{"next":"q"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if checkJSON(b) != nil {
			return
		}
		checkSame[completeBody](t, b)
		checkSame[holderBody](t, b)
		checkSame[claimBody](t, b)
		checkSame[claimNextBody](t, b)
		checkSame[nextClaimBody](t, b)
	})
}

func checkSame[T any, P interface {
	*T
	fastBody
}](t *testing.T, b []byte) {
	t.Helper()
	var fast T
	if !decodeFast(b, P(&fast)) {
		return
	}
	slow, err := slowDecode[T](b)
	require.NoError(t, err, "fast path took %s", b)
	require.True(t, reflect.DeepEqual(slow, fast), "%s: fast %+v, slow %+v", b, fast, slow)
}
