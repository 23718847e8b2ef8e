-- The daemon's policy shared in PostgreSQL (ledger.url): the day's budget, the hourly
-- generation count and the circuit breakers, decided by the database for every daemon
-- naming it. Applied by tsukud/events/pg_store.py's migration after events_pg.sql, in
-- the same transaction under the same advisory lock. docs/design/scale.md has the design.
--
-- Money is in micro-USD (the unit of tsukud/events/projections.py's Spend).

-- One row per UTC day. A reservation is ONE conditional UPDATE of it
-- (tsukud/policy/pg_policy.py: held + amount <= the reserving daemon's limit); the CHECK
-- is the backstop that refuses an over-spent row whoever writes it.
CREATE TABLE IF NOT EXISTS tsuku.budget_days (
    day         text   PRIMARY KEY,               -- 'YYYY-MM-DD', UTC
    limit_micro bigint NOT NULL,                  -- the limit of the last reservation granted
    held_micro  bigint NOT NULL DEFAULT 0,        -- open reservations + settled spend
    open_micro  bigint NOT NULL DEFAULT 0,        -- open reservations alone
    spent_micro bigint NOT NULL DEFAULT 0,        -- settled, at the actual cost
    CONSTRAINT budget_days_not_negative
        CHECK (held_micro >= 0 AND open_micro >= 0 AND spent_micro >= 0),
    CONSTRAINT budget_days_within_limit CHECK (held_micro <= limit_micro)
);

-- One row per reservation, inserted in the reservation's transaction: the money a
-- daemon holds, found again after a crash (a hold whose budget.reserved event was never
-- written is released at that daemon's next start: no call was made under it).
CREATE TABLE IF NOT EXISTS tsuku.budget_holds (
    reservation  text   PRIMARY KEY,
    origin       text   NOT NULL,
    day          text   NOT NULL REFERENCES tsuku.budget_days (day),
    amount_micro bigint NOT NULL CHECK (amount_micro >= 0),
    actual_micro bigint CHECK (actual_micro >= 0),  -- NULL while open
    made_at      timestamptz NOT NULL DEFAULT now(),
    settled_at   timestamptz
);
CREATE INDEX IF NOT EXISTS budget_holds_open ON tsuku.budget_holds (origin)
    WHERE actual_micro IS NULL;

-- One row per UTC clock hour: generations started, taken by a conditional UPDATE
-- (count < the daemon's limit), with the same CHECK backstop.
CREATE TABLE IF NOT EXISTS tsuku.generation_hours (
    hour      text    PRIMARY KEY,                -- 'YYYY-MM-DDTHH', UTC
    limit_n   integer NOT NULL,
    started_n integer NOT NULL DEFAULT 0,
    CONSTRAINT generation_hours_within_limit CHECK (started_n >= 0 AND started_n <= limit_n)
);

-- One row per circuit (an LLM provider, or a batch's registry: registry:npm), shared by
-- every daemon: opened by the failure
-- that completes a streak (one statement under the row's lock, so one daemon opens it),
-- and after open_until exactly one daemon wins the half-open probe by a conditional
-- UPDATE (tsukud/policy/pg_breakers.py); a probe owner that dies loses it at its lease.
CREATE TABLE IF NOT EXISTS tsuku.breakers (
    scope             text    PRIMARY KEY,
    state             text    NOT NULL DEFAULT 'closed' CHECK (state IN ('closed', 'open')),
    failures          integer NOT NULL DEFAULT 0,    -- consecutive, the team's
    opened_at         timestamptz,
    open_until        timestamptz,
    probe_owner       text,                          -- the origin sending the probe
    probe_lease_until timestamptz,
    last_error        text,
    CHECK (state = 'closed' OR open_until IS NOT NULL)
);

-- Each daemon's liveness lease, renewed while it runs (tsukud/policy/pg_leases.py). An
-- origin silent past alive_until never comes back as far as its holds know: another
-- daemon settles them at their worst case (settled_by names it), once, by the same
-- conditional UPDATE of the hold (actual_micro IS NULL) that makes any settlement once.
CREATE TABLE IF NOT EXISTS tsuku.origin_leases (
    origin      text        PRIMARY KEY,
    instance    text        NOT NULL,          -- the daemon process renewing it
    renewed_at  timestamptz NOT NULL,
    alive_until timestamptz NOT NULL
);
ALTER TABLE tsuku.budget_holds ADD COLUMN IF NOT EXISTS settled_by text;  -- another origin
