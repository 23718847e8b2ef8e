-- The batch queue shared in PostgreSQL (ledger.url): rows, leases and fence tokens.
--
-- The rows are the truth for who owns what (the batch.* events each daemon appends to
-- its own chain are the record). A claim bumps the fence; every later write of the
-- claimer (renewal, outcome, give-back) is conditional on that fence, so a worker whose
-- lease was taken (killed, paused, partitioned past lease_until) changes nothing.
-- Applied by the daemon after events_pg.sql, in the same migration transaction.
-- docs/design/scale.md "The batch queue: leases and fence tokens".

CREATE TABLE IF NOT EXISTS tsuku.batch_items (
    id          bigserial PRIMARY KEY,          -- order of addition (ties in priority)
    job         text   NOT NULL UNIQUE,         -- tool and source's stable id (sources.py)
    tool        text   NOT NULL,
    source      text   NOT NULL,
    priority    integer NOT NULL DEFAULT 0,
    state       text   NOT NULL DEFAULT 'queued'
                CHECK (state IN ('queued', 'running', 'done', 'failed', 'deferred')),
    owner       text,                           -- the daemon instance holding the lease
    lease_until timestamptz,
    fence       bigint NOT NULL DEFAULT 0,
    attempts    integer NOT NULL DEFAULT 0,
    not_before  timestamptz,                    -- a failed job in backoff: leasable then
    category    text,                           -- the last failure's, or deferral's reason
    message     text,
    refused     integer NOT NULL DEFAULT 0,     -- stale commits refused by the fence
    CHECK ((state = 'running') = (lease_until IS NOT NULL))
);
-- What a claim reads: queued ones by priority then age, running ones by lease expiry.
CREATE INDEX IF NOT EXISTS batch_items_ready ON tsuku.batch_items (priority DESC, id)
    WHERE state = 'queued';
CREATE INDEX IF NOT EXISTS batch_items_running ON tsuku.batch_items (lease_until)
    WHERE state = 'running';

-- One recipe per (tool, version), a database fact: a second commit of the same pair
-- (two items naming one tool, or a stale worker) inserts nothing.
CREATE TABLE IF NOT EXISTS tsuku.batch_recipes (
    tool         text    NOT NULL,
    version      text    NOT NULL,              -- '' when the upstream version is unknown
    recipe       text    NOT NULL,
    sha256       text    NOT NULL,
    tag          text,
    generated_by text,
    validated    boolean NOT NULL,
    item         bigint  NOT NULL,
    fence        bigint  NOT NULL,
    origin       text    NOT NULL,              -- the daemon that committed it
    committed    bigserial,                     -- order of commit: later is newer
    PRIMARY KEY (tool, version)
);
