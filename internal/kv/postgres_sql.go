package kv

import (
	"strconv"
	"strings"
)

// postgresSQL is every statement the engine sends, with the schema's name
// in place (a validated identifier). What they use, kept to what
// CockroachDB and YugabyteDB also run: bytea keys (ordered bytewise),
// INSERT ... SELECT FROM unnest(arrays) ON CONFLICT DO UPDATE, = ANY(array),
// SELECT ... FOR SHARE (the guard), FOR UPDATE SKIP LOCKED (the expiry
// cleaner), REPEATABLE READ READ ONLY transactions (readers).
type postgresSQL struct {
	probe  string // reads the table once at open
	guard  string // the guard's row, locked FOR SHARE: $1 shard, $2 owner, $3 epoch
	upsert string // $1 shard, $2 keys, $3 values, $4 expiries [, $5 owner, $6 epoch]
	delete string // $1 shard, $2 keys [, $3 owner, $4 epoch]
	get    string // $1 shard, $2 key, $3 now
	has    string // $1 shard, $2 key, $3 now
	// scans[reverse][bounded][withValues]: $1 shard, $2 now, $3 lo (from,
	// inclusive), $4 hi (to, exclusive, when bounded); 256 keys a page.
	scans [2][2][2]string
	clean string // $1 shard, $2 now, $3 limit [, $4 owner, $5 epoch]
}

// postgresPage is how many keys one query of a scan reads.
const postgresPage = 256

func newPostgresSQL(schema string, guarded bool) postgresSQL {
	kv := schema + ".kv"
	// held is the guard again, inside a write: the row the guard locked
	// is still there, so the condition only stops a write whose guard
	// found no row (the transaction then commits nothing).
	held := func(shard, owner, epoch string) string {
		if !guarded {
			return ""
		}
		return " AND EXISTS (SELECT 1 FROM " + schema + ".shard_owners WHERE shard = " + shard + " AND owner = " + owner + " AND epoch = " + epoch + ")"
	}
	live := " AND (expires_at = 0 OR expires_at > $3)"
	q := postgresSQL{
		probe: "SELECT 1 FROM " + kv + " WHERE shard = $1 LIMIT 1",
		guard: "SELECT 1 FROM " + schema + ".shard_owners WHERE shard = $1 AND owner = $2 AND epoch = $3 FOR SHARE",
		upsert: "INSERT INTO " + kv + " (shard, k, v, expires_at) SELECT $1, u.k, u.v, u.e FROM unnest($2::bytea[], $3::bytea[], $4::bigint[]) AS u(k, v, e) WHERE true" +
			held("$1", "$5", "$6") + " ON CONFLICT (shard, k) DO UPDATE SET v = excluded.v, expires_at = excluded.expires_at",
		delete: "DELETE FROM " + kv + " WHERE shard = $1 AND k = ANY($2::bytea[])" + held("$1", "$3", "$4"),
		get:    "SELECT v FROM " + kv + " WHERE shard = $1 AND k = $2" + live,
		has:    "SELECT 1 FROM " + kv + " WHERE shard = $1 AND k = $2" + live,
		// The cleaner locks the rows it deletes first, skipping any a
		// write holds (so it never waits for the writer, and the two
		// never deadlock), and deletes only rows still expired when it
		// locked them (a key written again meanwhile stays).
		clean: "DELETE FROM " + kv + " WHERE shard = $1 AND k = ANY(ARRAY(SELECT k FROM " + kv +
			" WHERE shard = $1 AND expires_at <> 0 AND expires_at <= $2 LIMIT $3 FOR UPDATE SKIP LOCKED))" +
			" AND expires_at <> 0 AND expires_at <= $2" + held("$1", "$4", "$5"),
	}
	for rev := range 2 {
		for bounded := range 2 {
			for vals := range 2 {
				var b strings.Builder
				b.WriteString("SELECT k, ")
				if vals == 1 {
					b.WriteString("v, ")
				} else {
					b.WriteString("NULL::bytea, ")
				}
				b.WriteString("expires_at FROM " + kv + " WHERE shard = $1 AND (expires_at = 0 OR expires_at > $2) AND k >= $3")
				if bounded == 1 {
					b.WriteString(" AND k < $4")
				}
				if rev == 1 {
					b.WriteString(" ORDER BY k DESC")
				} else {
					b.WriteString(" ORDER BY k")
				}
				b.WriteString(" LIMIT " + strconv.Itoa(postgresPage))
				q.scans[rev][bounded][vals] = b.String()
			}
		}
	}
	return q
}
