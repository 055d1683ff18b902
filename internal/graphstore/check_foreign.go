package graphstore

import (
	"github.com/tinylib/msgp/msgp"

	"github.com/tether-run/tether/internal/records"
)

// foreignRecords checks that every record another package owns is one
// MessagePack map and nothing after it, as its generated codec writes it.
// What the map holds is its owner's to judge.
func (c *checker) foreignRecords() error {
	for _, k := range records.ForeignKinds() {
		err := c.tx.Scan([]byte{k.Tag, records.KeySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
			c.r.ForeignRecords++
			if msgp.NextType(val) != msgp.MapType {
				c.r.problem("%s record %q is not a MessagePack map", k.Name, key)
				return true, nil
			}
			if rest, err := msgp.Skip(val); err != nil || len(rest) > 0 {
				c.r.problem("%s record %q is not one whole MessagePack map", k.Name, key)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}
