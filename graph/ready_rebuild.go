package graph

import (
	"bytes"
	"encoding/binary"
)

// rebuildReady loads the mirror from the ready and queue indexes of every
// tenant.
func (s *Store) rebuildReady() error {
	return s.View(func(tx *Tx) error {
		err := tx.scan([]byte{tagByQueue, keySeparator}, nil, false, false, func(key, _ []byte) (bool, error) {
			parts := bytes.SplitN(key[2:], []byte{keySeparator}, 4)
			if len(parts) == 4 {
				s.ready.count(string(parts[0]), string(parts[1]), "", Status(parts[2]))
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		return tx.scan([]byte{tagReady, keySeparator}, nil, false, true, func(key, val []byte) (bool, error) {
			parts := bytes.SplitN(key[2:], []byte{keySeparator}, 3)
			if len(parts) != 3 || len(parts[2]) < orderKeyLength {
				return true, nil
			}
			it := readyItem{id: string(parts[2][orderKeyLength:])}
			copy(it.order[:], parts[2][:orderKeyLength])
			it.created = int64(binary.BigEndian.Uint64(it.order[8:]) ^ (1 << 63))
			if len(val) == 8 {
				it.runAt = int64(binary.BigEndian.Uint64(val))
			}
			s.ready.add(string(parts[0]), string(parts[1]), it)
			return true, nil
		})
	})
}
