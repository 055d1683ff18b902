package records

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Data built key by key reads back as exactly the map it stands for, value
// types included, so an event's data does not depend on which form made it.
func TestDataBuiltReadsBackAsItsMap(t *testing.T) {
	built := Data().Uint("fence", 1<<63).Uint("small", 7).Int("attempt", -3).Int("ttl_ms", 60000).
		Str("holder", "worker").StrOrNull("session", "").StrOrNull("to", "q2").Bool("capped_to_max", true).Null("outcome").Done()
	given := DataOf(map[string]any{
		"fence": uint64(1 << 63), "small": uint64(7), "attempt": int64(-3), "ttl_ms": int64(60000),
		"holder": "worker", "session": nil, "to": "q2", "capped_to_max": true, "outcome": nil,
	})
	read := func(d EventData) map[string]any {
		ev := Event{Seq: 9, Type: EventClaimed, NodeID: "n1", By: "worker", Data: d}
		b, err := ev.MarshalMsg(nil)
		require.NoError(t, err)
		require.LessOrEqual(t, len(b), ev.Msgsize())
		var back Event
		rest, err := back.UnmarshalMsg(b)
		require.NoError(t, err)
		require.Empty(t, rest)
		require.Equal(t, ev.Seq, back.Seq)
		return back.Data.Map()
	}
	require.Equal(t, read(given), read(built))
	require.Equal(t, read(built), built.Map(), "what the writer's hooks see is what a reader decodes")
	require.Len(t, built.Map(), 9)
	require.Equal(t, "worker", built.Get("holder"))
	require.Nil(t, built.Get("absent"))

	require.Equal(t, map[string]any{}, EventData{}.Map())
	require.Equal(t, map[string]any{}, read(EventData{}))
	require.Equal(t, map[string]any{}, read(Data().Done()))

	j, err := built.MarshalJSON()
	require.NoError(t, err)
	var fromJSON EventData
	require.NoError(t, fromJSON.UnmarshalJSON(j))
	require.Equal(t, "q2", fromJSON.Get("to"))
}

// Data's map header is one byte: a sixteenth key is a programming error.
func TestDataTakesAtMostFifteenKeys(t *testing.T) {
	d := Data()
	keys := "abcdefghijklmnop"
	for i := 0; i < maxDataKeys; i++ {
		d = d.Int(keys[i:i+1], int64(i))
	}
	require.Len(t, d.Done().Map(), maxDataKeys)
	require.Panics(t, func() { d.Int("p", 16) })
}
