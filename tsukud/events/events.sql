-- The tsuku event ledger: append-only, hash-chained.
--
-- Every state change of the daemon (LLM turns, tool calls, validations, repairs,
-- installs, budget and breaker transitions) is one row. State is rebuilt from these
-- rows at start-up, so nothing that matters lives only in memory.
--
-- hash = sha256(prev_hash || chain_line(row)), see tsukud/events/chain.py; the first
-- row's prev_hash is 64 zeros. `tsukuctl events verify` recomputes the chain.
-- The daemon sets: journal_mode=WAL, synchronous=FULL (a commit is durable before the
-- appender is told so), foreign_keys=ON.

CREATE TABLE IF NOT EXISTS events (
    id      INTEGER PRIMARY KEY,  -- 1, 2, 3 ... without gaps
    ts      TEXT    NOT NULL,     -- UTC, 'YYYY-MM-DDTHH:MM:SS.ffffffZ' (text order = time order)
    type    TEXT    NOT NULL,     -- 'llm.turn', 'budget.reserved', ...
    session TEXT,                 -- one create/install/discover run, or NULL
    payload TEXT    NOT NULL,     -- canonical JSON object (sorted keys, no spaces)
    hash    TEXT    NOT NULL      -- hex sha256 chaining this row to the previous one
) STRICT;

CREATE INDEX IF NOT EXISTS events_ts ON events (ts);
CREATE INDEX IF NOT EXISTS events_type_ts ON events (type, ts);
CREATE INDEX IF NOT EXISTS events_session ON events (session) WHERE session IS NOT NULL;

-- Append-only: tsuku itself never updates or deletes a row. (Someone with the file can
-- drop these triggers; the hash chain is what detects that.)
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event ledger is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event ledger is append-only'); END;

CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

-- Summary rollups (tsukud/events/rollups.py): counts, tokens and nano-dollars per
-- hour x type x provider x model, written in the same transaction as the events they
-- count; meta.rollups_through is the last event id counted. Derived data: rebuilt
-- from the events at start when missing or behind, so they may be updated in place.
CREATE TABLE IF NOT EXISTS rollups (
    hour            TEXT    NOT NULL,  -- substr(ts, 1, 13): 'YYYY-MM-DDTHH'
    type            TEXT    NOT NULL,
    provider        TEXT,              -- a daemon event's payload.provider, if text
    model           TEXT,              -- a daemon event's payload.model, if text
    events          INTEGER NOT NULL,
    llm_turns       INTEGER NOT NULL,
    input_tokens    INTEGER NOT NULL,
    output_tokens   INTEGER NOT NULL,
    cost_nano       INTEGER NOT NULL,  -- nano-dollars
    estimated_nano  INTEGER NOT NULL,  -- the part of cost_nano that is estimated
    cost_unknown    INTEGER NOT NULL   -- calls with no known price
) STRICT;
CREATE INDEX IF NOT EXISTS rollups_key ON rollups (hour, type, provider, model);

-- The same sums per session x hour (tsukud/events/rollups.py SESSIONS), folded in the
-- same transaction; meta.session_rollups_through is the last event id counted.
CREATE TABLE IF NOT EXISTS session_rollups (
    session         TEXT,              -- NULL: events outside any session
    hour            TEXT    NOT NULL,  -- substr(ts, 1, 13)
    events          INTEGER NOT NULL,
    llm_turns       INTEGER NOT NULL,
    input_tokens    INTEGER NOT NULL,
    output_tokens   INTEGER NOT NULL,
    cost_nano       INTEGER NOT NULL,
    estimated_nano  INTEGER NOT NULL,
    cost_unknown    INTEGER NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS session_rollups_key ON session_rollups (session, hour);
