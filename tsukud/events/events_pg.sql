-- The tsuku event ledger shared in PostgreSQL (ledger.url): one hash chain per origin.
--
-- Each daemon is an origin (a stable id kept in its home). Its rows are the SQLite
-- ledger's rows (schema/events.sql) with `id` named `seq`, hashed the same way
-- (tsukud/events/chain.py): hash = sha256(prev hash of this origin || chain_line(row)).
-- `gid` is the database's order, for listings across origins; it is outside the chains.
-- Run by the daemon at start, in one transaction under an advisory lock, so daemons
-- starting together do not both create it. docs/design/scale.md has the whole design.

CREATE SCHEMA IF NOT EXISTS tsuku;

CREATE TABLE IF NOT EXISTS tsuku.meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);

-- One row per origin: its chain's head, moved in the same transaction as its rows, so
-- a writer finds (and locks) the head with one indexed lookup per batch.
CREATE TABLE IF NOT EXISTS tsuku.origins (
    origin     text   PRIMARY KEY,
    first_seen text   NOT NULL,
    head_seq   bigint NOT NULL DEFAULT 0,
    head_hash  text   NOT NULL DEFAULT '0000000000000000000000000000000000000000000000000000000000000000'
);

CREATE TABLE IF NOT EXISTS tsuku.events (
    gid     bigserial PRIMARY KEY,
    origin  text   NOT NULL REFERENCES tsuku.origins (origin),
    seq     bigint NOT NULL,   -- 1, 2, 3 ... without gaps, per origin
    -- Compared as bytes whatever the database's collation (queries.where says COLLATE
    -- "C" too, so the indexes serve its ranges): times and type prefixes sort as in SQLite.
    ts      text COLLATE "C" NOT NULL,   -- UTC, 'YYYY-MM-DDTHH:MM:SS.ffffffZ'
    type    text COLLATE "C" NOT NULL,
    session text,
    payload text   NOT NULL,   -- canonical JSON, byte for byte as hashed
    hash    text   NOT NULL,
    UNIQUE (origin, seq)
);
CREATE INDEX IF NOT EXISTS events_ts ON tsuku.events (ts);
CREATE INDEX IF NOT EXISTS events_origin_type_ts ON tsuku.events (origin, type, ts);
CREATE INDEX IF NOT EXISTS events_type_ts ON tsuku.events (type, ts);
CREATE INDEX IF NOT EXISTS events_session ON tsuku.events (session) WHERE session IS NOT NULL;

-- Summary rollups (tsukud/events/rollups.py): the SQLite ledger's `rollups` and
-- `session_rollups` (schema/events.sql), one pair for every origin (a team's summary is
-- over everyone's events). Each batch adds its sums here in the transaction that writes
-- its events, with INSERT ... ON CONFLICT DO UPDATE (col = col + EXCLUDED.col), so
-- daemons writing at once add up rather than collide. A NULL key matches itself: the
-- unique indexes key on coalesce(k, '') and (k IS NULL) (NULLS NOT DISTINCT would need
-- PostgreSQL 15), and rollups.Table.pg_conflict names the same expressions. Derived
-- data, updated in place: held to the events by `events verify`, rebuilt when off.
CREATE TABLE IF NOT EXISTS tsuku.rollups (
    hour            text COLLATE "C" NOT NULL,  -- substr(ts, 1, 13): 'YYYY-MM-DDTHH'
    type            text COLLATE "C" NOT NULL,
    provider        text,                       -- a daemon event's payload.provider
    model           text,                       -- a daemon event's payload.model
    events          bigint NOT NULL,
    llm_turns       bigint NOT NULL,
    input_tokens    bigint NOT NULL,
    output_tokens   bigint NOT NULL,
    cost_nano       bigint NOT NULL,            -- nano-dollars
    estimated_nano  bigint NOT NULL,            -- the part of cost_nano that is estimated
    cost_unknown    bigint NOT NULL             -- calls with no known price
);
CREATE UNIQUE INDEX IF NOT EXISTS rollups_key ON tsuku.rollups
    (hour, type, coalesce(provider, ''), (provider IS NULL), coalesce(model, ''), (model IS NULL));

CREATE TABLE IF NOT EXISTS tsuku.session_rollups (
    session         text,                       -- NULL: events outside any session
    hour            text COLLATE "C" NOT NULL,
    events          bigint NOT NULL,
    llm_turns       bigint NOT NULL,
    input_tokens    bigint NOT NULL,
    output_tokens   bigint NOT NULL,
    cost_nano       bigint NOT NULL,
    estimated_nano  bigint NOT NULL,
    cost_unknown    bigint NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS session_rollups_key ON tsuku.session_rollups
    (coalesce(session, ''), (session IS NULL), hour);

-- Which events of each origin both tables count: every seq up to `through`, moved in
-- the same transaction as the sums. A writer moves its own mark only from the seq it
-- last counted (one conditional UPDATE, which also locks the row for its transaction);
-- a catch-up or rebuild (rollups.pg_catch_up) locks every mark first, so it never
-- folds what a writer is adding, and two daemons starting together fold it once.
CREATE TABLE IF NOT EXISTS tsuku.rollup_marks (
    origin  text   PRIMARY KEY REFERENCES tsuku.origins (origin),
    through bigint NOT NULL
);

-- Append-only: tsuku never updates or deletes an event (the chains detect it if someone
-- with the rights does).
CREATE OR REPLACE FUNCTION tsuku.append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'the event ledger is append-only';
END $$;
CREATE OR REPLACE TRIGGER events_append_only BEFORE UPDATE OR DELETE ON tsuku.events
    FOR EACH ROW EXECUTE FUNCTION tsuku.append_only();

-- SQLite's json_extract for the daemon's own start-up reads (they run the same SQL on
-- both backends): a payload field as text ('$.a.b' paths only), and sum() over such
-- text, exactly (numeric).
CREATE OR REPLACE FUNCTION tsuku.json_extract(doc text, path text) RETURNS text
    LANGUAGE sql IMMUTABLE STRICT AS
$$ SELECT doc::jsonb #>> string_to_array(substr(path, 3), '.') $$;
CREATE OR REPLACE FUNCTION tsuku.sum_text_step(acc numeric, v text) RETURNS numeric
    LANGUAGE sql IMMUTABLE AS
$$ SELECT CASE WHEN v IS NULL THEN acc ELSE coalesce(acc, 0) + v::numeric END $$;
CREATE OR REPLACE AGGREGATE tsuku.sum(text) (SFUNC = tsuku.sum_text_step, STYPE = numeric);

-- The schema's version is written by the migration (pg_store.migrate).
