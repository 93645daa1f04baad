import type { Knex } from 'knex';

// The request path in one round trip: weft_authenticate_request() finds the key by its public
// prefix, checks the secret's digest, revocation and expiry, and counts the request against the
// key's and the workspace's fixed 60-second windows, all in one statement.
//
// The counters are an UNLOGGED table: their writes make no WAL, so a request never waits on a WAL
// flush and the hot per-workspace row is locked only for microseconds. A crash empties an unlogged
// table, which only resets the current window (at most 60 seconds of counting); the keys, limits
// and everything else stay durable.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE UNLOGGED TABLE request_counters (
      bucket text PRIMARY KEY,
      window_start bigint NOT NULL,
      used integer NOT NULL
    )`);
  await knex.raw(`
    CREATE FUNCTION weft_authenticate_request(
      p_prefix text, p_secret_hash text, p_window_seconds integer, p_default_workspace_requests integer, p_default_key_requests integer
    ) RETURNS TABLE (
      outcome text, key_id uuid, workspace_id uuid, member_id uuid, scopes text[], read_permissions text[], write_permissions text[],
      project_ids uuid[], workspace_resources boolean, member_active boolean, member_role text,
      limit_workspace integer, limit_key integer, used_key integer, used_workspace integer, reset_ms bigint
    ) LANGUAGE plpgsql AS $$
    #variable_conflict use_column
    DECLARE
      k record;
      now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000);
      win bigint := now_ms / (p_window_seconds * 1000);
      key_bucket text;
      ws_bucket text;
    BEGIN
      SELECT a.id, a.workspace_id, a.created_by_member_id, a.secret_hash, a.scopes, a.read_permissions, a.write_permissions, a.project_ids,
             a.workspace_resources, a.revoked_at, a.expires_at, (m.id IS NOT NULL AND m.removed_at IS NULL) AS member_active, m.role,
             coalesce(l.workspace_requests, p_default_workspace_requests) AS ws_limit, coalesce(l.api_key_requests, p_default_key_requests) AS key_limit
        INTO k
        FROM api_keys a
        LEFT JOIN members m ON m.workspace_id = a.workspace_id AND m.id = a.created_by_member_id
        LEFT JOIN api_limit_settings l ON l.workspace_id = a.workspace_id
       WHERE a.prefix = p_prefix;
      -- Digests of a secret, not secrets: comparing them in SQL reveals nothing usable. Bad
      -- credentials are never counted, so nobody can spend a workspace's budget with a guessed prefix.
      IF NOT FOUND OR k.secret_hash <> p_secret_hash OR k.revoked_at IS NOT NULL THEN
        outcome := 'invalid';
        RETURN NEXT;
        RETURN;
      END IF;
      key_id := k.id; workspace_id := k.workspace_id; member_id := k.created_by_member_id; scopes := k.scopes;
      read_permissions := k.read_permissions; write_permissions := k.write_permissions; project_ids := k.project_ids;
      workspace_resources := k.workspace_resources; member_active := k.member_active; member_role := k.role;
      limit_workspace := k.ws_limit; limit_key := k.key_limit;
      reset_ms := (win + 1) * p_window_seconds * 1000 - now_ms;
      IF k.expires_at IS NOT NULL AND k.expires_at <= clock_timestamp() THEN
        outcome := 'expired';
        RETURN NEXT;
        RETURN;
      END IF;

      -- The key's bucket first, then the workspace's: one lock order for every request.
      key_bucket := 'k:' || k.id;
      ws_bucket := 'w:' || k.workspace_id;
      INSERT INTO request_counters AS c (bucket, window_start, used) VALUES (key_bucket, win, 1)
      ON CONFLICT (bucket) DO UPDATE
         SET used = CASE WHEN c.window_start = excluded.window_start THEN c.used + 1 ELSE 1 END, window_start = excluded.window_start
       WHERE c.window_start <> excluded.window_start OR c.used < k.key_limit
      RETURNING c.used INTO used_key;
      IF NOT FOUND THEN
        outcome := 'key_limited';
        used_key := k.key_limit;
        RETURN NEXT;
        RETURN;
      END IF;
      INSERT INTO request_counters AS c (bucket, window_start, used) VALUES (ws_bucket, win, 1)
      ON CONFLICT (bucket) DO UPDATE
         SET used = CASE WHEN c.window_start = excluded.window_start THEN c.used + 1 ELSE 1 END, window_start = excluded.window_start
       WHERE c.window_start <> excluded.window_start OR c.used < k.ws_limit
      RETURNING c.used INTO used_workspace;
      IF NOT FOUND THEN
        -- Refused by the workspace: the request does not run, so it gives the key's count back.
        UPDATE request_counters SET used = used - 1 WHERE bucket = key_bucket AND window_start = win;
        outcome := 'workspace_limited';
        used_key := used_key - 1;
        used_workspace := k.ws_limit;
        RETURN NEXT;
        RETURN;
      END IF;
      outcome := 'ok';
      RETURN NEXT;
    END $$`);
  await knex.raw('DROP TABLE IF EXISTS request_limit_counters');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS weft_authenticate_request(text, text, integer, integer, integer)');
  await knex.raw('DROP TABLE IF EXISTS request_counters');
  await knex.raw('CREATE TABLE request_limit_counters (key varchar(255) PRIMARY KEY, points integer NOT NULL DEFAULT 0, expire bigint)');
}
