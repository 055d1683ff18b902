-- Enqueue in your own transaction: an application inserts a node into
-- {{schema}}.intake inside its own transaction (through {{schema}}.enqueue,
-- or a plain INSERT); Tether's intake consumer (internal/intake) creates
-- the node once the row has committed, exactly once, and deletes the row.
-- A row rolled back was never there, so it never makes a node.
--
-- The table's CHECK constraints hold every row to the bounds, however it
-- is written: a tenant id as credentials name it, a node that is a JSON
-- object of at most 1 MiB (TETHER_MAX_BODY_BYTES' default; a server set
-- lower answers 413 and the row goes to intake_failed).

CREATE TABLE {{schema}}.intake (
    -- The row's id is its Idempotency-Key (intake-<id>): never reused.
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant     text NOT NULL
        CONSTRAINT intake_tenant_format CHECK (tenant ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    node       jsonb NOT NULL
        CONSTRAINT intake_node_object CHECK (jsonb_typeof(node) = 'object')
        CONSTRAINT intake_node_size CHECK (octet_length(node::text) <= 1048576),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Rows whose node the API refused (400, 404, 409, 413, 422): moved here,
-- with the refusal, in the transaction that takes them out of intake, so a
-- bad row never holds up the ones behind it. An operator reads, fixes and
-- re-enqueues them, or deletes them.
CREATE TABLE {{schema}}.intake_failed (
    id         bigint PRIMARY KEY, -- the intake row's id
    tenant     text NOT NULL,
    node       jsonb NOT NULL,
    created_at timestamptz NOT NULL,
    failed_at  timestamptz NOT NULL DEFAULT now(),
    status     integer NOT NULL, -- the HTTP status of the refusal
    error      text NOT NULL
);

-- enqueue validates what it can cheaply, with messages naming the argument,
-- and inserts; it returns the row's id. The insert wakes the consumer on
-- commit (the trigger below): NOTIFY is transactional, so a rolled-back
-- enqueue wakes nobody.
CREATE FUNCTION {{schema}}.enqueue(tenant text, node jsonb) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    new_id bigint;
BEGIN
    IF tenant IS NULL OR tenant !~ '^[a-z0-9][a-z0-9_-]{0,62}$' THEN
        RAISE EXCEPTION 'tenant: must match ^[a-z0-9][a-z0-9_-]{0,62}$, got %', quote_nullable(tenant)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF node IS NULL OR jsonb_typeof(node) <> 'object' THEN
        RAISE EXCEPTION 'node: must be a JSON object, got %', coalesce(jsonb_typeof(node), 'null')
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    IF octet_length(node::text) > 1048576 THEN
        RAISE EXCEPTION 'node: must be at most 1048576 bytes of JSON, got %', octet_length(node::text)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    INSERT INTO {{schema}}.intake (tenant, node) VALUES (enqueue.tenant, enqueue.node)
        RETURNING id INTO new_id;
    RETURN new_id;
END
$$;

-- One notification per statement that inserted rows, on the channel
-- <schema>_intake (the schema's name cut to 56 bytes, so the channel fits
-- in 63), delivered on commit; PostgreSQL folds the identical
-- notifications of one transaction into one. A plain INSERT or COPY into
-- intake wakes the consumer as enqueue does.
CREATE FUNCTION {{schema}}.intake_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify(left(TG_TABLE_SCHEMA, 56) || '_intake', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER intake_notify AFTER INSERT ON {{schema}}.intake
    FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.intake_notify();
