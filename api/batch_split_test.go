package api

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzSplitOp holds the fast path of reading a batch op to the general
// one: the same op, id and body (once encoding/json has compacted it).
func FuzzSplitOp(f *testing.F) {
	for _, s := range []string{
		`{"op":"complete","id":"a","fence":3}`, ` { "id" : "b" , "op":"renew" } `,
		`{"op":"fail","id":"c","error":"x \"y\" <z>","zeta":[1,{"a":"}"}],"alpha":{"b":null}}`,
		`{"op":"c\u006fmplete","id":"d"}`, `{"op":1,"id":"e"}`, `{}`, `[]`, `{"op":"complete"}`,
		`{"op":"complete","id":"f","result":"\\"}`, `{"op":"complete","id":"g","n":-1.5e3,"t":true}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		raw := []byte(s)
		if checkJSON(raw) != nil || len(raw) == 0 {
			return
		}
		name, id, body, ok := splitOp(raw)
		if !ok {
			return
		}
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(raw, &fields))
		var wantName, wantID string
		require.NoError(t, json.Unmarshal(fields["op"], &wantName))
		require.NoError(t, json.Unmarshal(fields["id"], &wantID))
		require.Equal(t, wantName, name)
		require.Equal(t, wantID, id)
		delete(fields, "op")
		delete(fields, "id")
		want, err := json.Marshal(fields)
		require.NoError(t, err)
		got, err := json.Marshal(json.RawMessage(body))
		require.NoError(t, err, "body %s", body)
		require.Equal(t, string(want), string(got))
	})
}
