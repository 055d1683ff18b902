-- The storage engine's table and the cluster's coordination tables.
CREATE SCHEMA IF NOT EXISTS {{schema}};

-- One row per key of a store; shard says whose store (a cluster's shard).
-- expires_at: unix seconds, 0 for none.
CREATE TABLE {{schema}}.kv (shard int NOT NULL, k bytea NOT NULL, v bytea NOT NULL, expires_at bigint NOT NULL DEFAULT 0, PRIMARY KEY (shard, k));

-- The expiry cleaner's walk: only keys with an expiry are indexed.
CREATE INDEX kv_expiry ON {{schema}}.kv (shard, expires_at) WHERE expires_at <> 0;

CREATE TABLE {{schema}}.meta (name text PRIMARY KEY, value text NOT NULL);

CREATE TABLE {{schema}}.members (id text PRIMARY KEY, url text NOT NULL, leaving boolean NOT NULL DEFAULT false, expires_at timestamptz NOT NULL);

CREATE TABLE {{schema}}.shard_owners (shard int PRIMARY KEY, owner text, epoch bigint NOT NULL DEFAULT 0, since timestamptz);
