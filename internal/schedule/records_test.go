package schedule

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tether-run/tether/internal/nodes"
	"github.com/tether-run/tether/internal/records"
)

// storedTemplate is the stored form of fullTemplate: a change to how a
// schedule's node template is encoded must show here, since stores hold
// such records.
const storedTemplate = "de0010a26964a173a874696d657a6f6e65a0a874656d706c617465de0012a269" +
	"64a3742d31a474797065a56275696c64a57469746c65a57469746c65a4626f64" +
	"79a4626f6479a57175657565a171a87072696f7269747903a6746172676574a3" +
	"626f62a66c6162656c7392a161a162a570726f707381a16ba176ac6d61785f61" +
	"7474656d70747304a672756e5f6174c70c050000000069a7bdbf351b94c0a864" +
	"656c61795f6d73d101f4aa74696d656f75745f6d73d11770a76261636b6f6666" +
	"930a64cb4000000000000000a6706172656e74a170ad6f6e5f6368696c645f66" +
	"61696ca669676e6f7265aa646570656e64735f6f6e91a164a5626c6f627391a3" +
	"736861a5636861696e92de0012a26964a3742d31a474797065a56275696c64a5" +
	"7469746c65a57469746c65a4626f6479a4626f6479a57175657565a171a87072" +
	"696f7269747903a6746172676574a3626f62a66c6162656c7392a161a162a570" +
	"726f707381a16ba176ac6d61785f617474656d70747304a672756e5f6174c70c" +
	"050000000069a7bdbf351b94c0a864656c61795f6d73d101f4aa74696d656f75" +
	"745f6d73d11770a76261636b6f6666930a64cb4000000000000000a670617265" +
	"6e74a170ad6f6e5f6368696c645f6661696ca669676e6f7265aa646570656e64" +
	"735f6f6e91a164a5626c6f627391a373686181a474797065a36d696ea76f7665" +
	"726c6170a0a763617463687570a0b1636174636875705f77696e646f775f6d73" +
	"00a96a69747465725f6d7300aa6261636b6f66665f6d7390a7656e61626c6564" +
	"c2a776657273696f6e00aa637265617465645f6279a0aa637265617465645f61" +
	"74c70c05fffffff1886e090000000000aa757064617465645f6174c70c05ffff" +
	"fff1886e090000000000a86c6173745f73657100a86661696c7572657300"

// fullTemplate sets every field of a node template.
func fullTemplate() nodes.NodeSpec {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891000000, time.UTC)
	s, i := func(v string) *string { return &v }, func(v int64) *int64 { return &v }
	return nodes.NodeSpec{
		ID: s("t-1"), Type: "build", Title: s("title"), Body: s("body"), Queue: s("q"),
		Priority: i(3), Target: s("bob"), Labels: []string{"a", "b"}, Props: map[string]any{"k": "v"},
		MaxAttempts: i(4), RunAt: &at, DelayMS: i(500), TimeoutMS: i(6000),
		Backoff: &records.Backoff{InitialMS: 10, MaxMS: 100, Factor: 2}, Parent: s("p"),
		OnChildFail: s("ignore"), DependsOn: []string{"d"}, Blobs: []string{"sha"},
	}
}

func TestTemplateStoredBytes(t *testing.T) {
	t.Parallel()
	rec := Record{ID: "s", Template: fullTemplate(), Chain: []nodes.NodeSpec{fullTemplate(), {Type: "min"}}}
	b, err := rec.MarshalMsg(nil)
	require.NoError(t, err)
	require.Equal(t, storedTemplate, hex.EncodeToString(b))
	var back Record
	_, err = back.UnmarshalMsg(b)
	require.NoError(t, err)
	require.Equal(t, rec.Template, back.Template)
	require.Equal(t, rec.Chain, back.Chain)
}
