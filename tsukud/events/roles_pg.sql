-- One database role per daemon: who may write which origin's events (docs/design/scale.md,
-- "Roles and who may write what").
--
-- An origin belongs to the role that registered it (its first start inserts the origins
-- row; `role` defaults to the role connected). Row-level security lets a daemon's role
-- insert events only into an origin it owns, and move only its own origin's head, while
-- every role reads every origin (the team's ledger is meant to be read by the team). The
-- schema's owner (and a superuser) is not bound by these policies (they are not FORCEd):
-- a single-role deployment, every daemon connecting as the owner, works as before and
-- loses only this property; the chains and anchors still show edits and truncation.
-- Applied by the owner's migration, after events_pg.sql; a daemon's own role does not
-- migrate (it may not create or alter anything in the schema).

-- Made once: every start's migration runs this file, and an ALTER TABLE or a policy
-- made again would take the tables' exclusive lock each time, stalling the other
-- daemons' writes and reads while it waits. A policy changed later gets a new name.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = 'tsuku' AND table_name = 'origins'
                      AND column_name = 'role') THEN
        ALTER TABLE tsuku.origins ADD COLUMN role name NOT NULL DEFAULT current_user;
    END IF;
    IF NOT (SELECT relrowsecurity FROM pg_class WHERE oid = 'tsuku.events'::regclass) THEN
        ALTER TABLE tsuku.events ENABLE ROW LEVEL SECURITY;
    END IF;
    IF NOT (SELECT relrowsecurity FROM pg_class WHERE oid = 'tsuku.origins'::regclass) THEN
        ALTER TABLE tsuku.origins ENABLE ROW LEVEL SECURITY;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'tsuku'
                    AND tablename = 'events' AND policyname = 'events_read') THEN
        CREATE POLICY events_read ON tsuku.events FOR SELECT USING (true);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'tsuku'
                    AND tablename = 'events' AND policyname = 'events_own_origin') THEN
        CREATE POLICY events_own_origin ON tsuku.events FOR INSERT
            WITH CHECK (EXISTS (SELECT 1 FROM tsuku.origins o
                                 WHERE o.origin = events.origin AND o.role = current_user));
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'tsuku'
                    AND tablename = 'origins' AND policyname = 'origins_read') THEN
        CREATE POLICY origins_read ON tsuku.origins FOR SELECT USING (true);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'tsuku'
                    AND tablename = 'origins' AND policyname = 'origins_claim') THEN
        CREATE POLICY origins_claim ON tsuku.origins FOR INSERT WITH CHECK (role = current_user);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_policies WHERE schemaname = 'tsuku'
                    AND tablename = 'origins' AND policyname = 'origins_own_head') THEN
        CREATE POLICY origins_own_head ON tsuku.origins FOR UPDATE
            USING (role = current_user) WITH CHECK (role = current_user);
    END IF;
END
$$;

-- What a daemon's role needs, in one place: run by the owner once per daemon role
-- (`SELECT tsuku.grant_daemon('tsuku_host_a')`), and again after an upgrade that added
-- tables. Events are insert-only, origins never deleted, the schema's version read-only;
-- the policy's and the queue's tables (every other table) are the daemons' to change.
CREATE OR REPLACE FUNCTION tsuku.grant_daemon(daemon_role name) RETURNS void
    LANGUAGE plpgsql AS
$$
DECLARE
    t text;
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA tsuku TO %I', daemon_role);
    EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA tsuku TO %I', daemon_role);
    EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA tsuku TO %I', daemon_role);
    EXECUTE format('GRANT INSERT ON tsuku.events TO %I', daemon_role);
    EXECUTE format('GRANT INSERT, UPDATE ON tsuku.origins TO %I', daemon_role);
    FOR t IN SELECT tablename FROM pg_tables
              WHERE schemaname = 'tsuku' AND tablename NOT IN ('events', 'origins', 'meta')
    LOOP
        EXECUTE format('GRANT INSERT, UPDATE, DELETE ON tsuku.%I TO %I', t, daemon_role);
    END LOOP;
END
$$;

-- A migration that added tables (summary rollups, schema version 3) grants them to every
-- role already granted a daemon's rights (it may insert events): its daemon, restarted
-- on the new version, would otherwise be refused at start until the owner called
-- grant_daemon again. Run by every migration; a role granted once is granted again.
DO $$
DECLARE
    r name;
BEGIN
    FOR r IN SELECT DISTINCT a.grantee::regrole::name
               FROM pg_class c, aclexplode(c.relacl) AS a
              WHERE c.oid = 'tsuku.events'::regclass AND a.privilege_type = 'INSERT'
                AND a.grantee <> 0 AND a.grantee <> c.relowner
    LOOP
        PERFORM tsuku.grant_daemon(r);
    END LOOP;
END
$$;
