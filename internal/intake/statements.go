package intake

import "github.com/jackc/pgx/v5"

// statements are the consumer's SQL, with the schema's name quoted in.
type statements struct {
	channel string // LISTEN's channel, quoted: <schema>_intake
	take    string // $1 = how many
	finish  string // $1 = every id done, $2.. the failed ones' ids, statuses, errors
}

func statementsFor(schema string) statements {
	intake := pgx.Identifier{schema, "intake"}.Sanitize()
	failed := pgx.Identifier{schema, "intake_failed"}.Sanitize()
	return statements{
		channel: pgx.Identifier{channelOf(schema)}.Sanitize(),
		// SKIP LOCKED: consumers on other servers take other rows, and a
		// row an application has not committed is invisible anyway.
		take: `SELECT id, tenant, node FROM ` + intake + ` ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED`,
		// One statement deletes the rows done and moves the failed ones.
		finish: `WITH gone AS (DELETE FROM ` + intake + ` WHERE id = ANY($1::bigint[]) RETURNING id, tenant, node, created_at)
INSERT INTO ` + failed + ` (id, tenant, node, created_at, status, error)
SELECT g.id, g.tenant, g.node, g.created_at, f.status, f.error
FROM gone g JOIN unnest($2::bigint[], $3::integer[], $4::text[]) AS f(id, status, error) ON f.id = g.id`,
	}
}

// channelOf is the schema's notification channel, as the migration's
// trigger names it: <schema>_intake, the name cut to 56 bytes (schema names
// are ASCII) so that the channel fits in PostgreSQL's 63.
func channelOf(schema string) string {
	return schema[:min(len(schema), 56)] + "_intake"
}
