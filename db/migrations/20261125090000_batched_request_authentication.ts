import type { Knex } from 'knex';

// Concurrent requests of one API process are authenticated and counted in one statement:
// weft_authenticate_requests() runs weft_authenticate_request() for each, in one transaction.
//
// A batch holds the counter rows it has locked until it commits, so every batch, in every process,
// must lock rows in one global order, or two batches could each wait for the other. The order is
// (workspace, then its workspace bucket before its keys' buckets, then key): each request now
// counts its workspace's bucket first and its key's second, and a batch takes its requests sorted
// by workspace and key. The single-request function keeps the same order, so both can run at once.

/** The output columns; a later migration (20261129120000) adds the key's expiry, for processes that keep keys. */
const columns = (withExpiry: boolean) => `outcome text, key_id uuid, workspace_id uuid, member_id uuid, scopes text[], read_permissions text[], write_permissions text[],
      project_ids uuid[], workspace_resources boolean, member_active boolean, member_role text,
      limit_workspace integer, limit_key integer, used_key integer, used_workspace integer, reset_ms bigint${withExpiry ? ', expires_at timestamptz' : ''}`;

/**
 * Counts the request in one bucket unless it is spent; FOUND tells whether it was counted. A
 * request that read the clock before a window turned but got the row after a newer request had
 * moved it on counts in the newer window: a bucket never goes back to an older one.
 */
const countIn = (bucket: string, limit: string, into: string) => `
      INSERT INTO request_counters AS c (bucket, window_start, used) VALUES (${bucket}, win, 1)
      ON CONFLICT (bucket) DO UPDATE
         SET used = CASE WHEN c.window_start >= excluded.window_start THEN c.used + 1 ELSE 1 END,
             window_start = greatest(c.window_start, excluded.window_start)
       WHERE c.window_start < excluded.window_start OR c.used < ${limit}
      RETURNING c.used INTO ${into};`;

export function singleRequest(workspaceFirst: boolean, withExpiry = false): string {
  const keyBucket = `${countIn('key_bucket', 'k.key_limit', 'used_key')}
      IF NOT FOUND THEN
        ${workspaceFirst ? `-- Refused by the key: the request does not run, so it gives the workspace's count back.
        UPDATE request_counters SET used = used - 1 WHERE bucket = ws_bucket AND window_start >= win;
        used_workspace := used_workspace - 1;
        ` : ''}outcome := 'key_limited';
        used_key := k.key_limit;
        RETURN NEXT;
        RETURN;
      END IF;`;
  const workspaceBucket = `${countIn('ws_bucket', 'k.ws_limit', 'used_workspace')}
      IF NOT FOUND THEN
        ${workspaceFirst ? `-- When the key's bucket is spent too, the key is named: it is the narrower limit (a read, no lock).
        IF EXISTS (SELECT 1 FROM request_counters WHERE bucket = key_bucket AND window_start >= win AND used >= k.key_limit) THEN
          outcome := 'key_limited';
          used_key := k.key_limit;
          RETURN NEXT;
          RETURN;
        END IF;
        ` : `-- Refused by the workspace: the request does not run, so it gives the key's count back.
        UPDATE request_counters SET used = used - 1 WHERE bucket = key_bucket AND window_start >= win;
        used_key := used_key - 1;
        `}outcome := 'workspace_limited';
        used_workspace := k.ws_limit;
        RETURN NEXT;
        RETURN;
      END IF;`;
  return `
    CREATE OR REPLACE FUNCTION weft_authenticate_request(
      p_prefix text, p_secret_hash text, p_window_seconds integer, p_default_workspace_requests integer, p_default_key_requests integer
    ) RETURNS TABLE (${columns(withExpiry)}) LANGUAGE plpgsql AS $$
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
      limit_workspace := k.ws_limit; limit_key := k.key_limit;${withExpiry ? '\n      expires_at := k.expires_at;' : ''}
      reset_ms := (win + 1) * p_window_seconds * 1000 - now_ms;
      IF k.expires_at IS NOT NULL AND k.expires_at <= clock_timestamp() THEN
        outcome := 'expired';
        RETURN NEXT;
        RETURN;
      END IF;

      ${workspaceFirst ? '-- The workspace' : '-- The key'}'s bucket first: one lock order for every request (see the migration).
      key_bucket := 'k:' || k.id;
      ws_bucket := 'w:' || k.workspace_id;
      ${workspaceFirst ? workspaceBucket + keyBucket : keyBucket + workspaceBucket}
      outcome := 'ok';
      RETURN NEXT;
    END $$`;
}

/** The batch function over weft_authenticate_request, with the same output columns. */
export function batchRequests(withExpiry = false): string {
  return `
    CREATE FUNCTION weft_authenticate_requests(
      p_prefixes text[], p_secret_hashes text[], p_window_seconds integer, p_default_workspace_requests integer, p_default_key_requests integer
    ) RETURNS TABLE (request integer, ${columns(withExpiry)}) LANGUAGE plpgsql AS $$
    #variable_conflict use_column
    DECLARE
      r record;
    BEGIN
      -- Sorted by workspace, then key (unknown prefixes last: they lock nothing), then arrival.
      FOR r IN
        SELECT u.ord::integer AS ord, u.prefix, u.secret_hash
          FROM unnest(p_prefixes, p_secret_hashes) WITH ORDINALITY AS u(prefix, secret_hash, ord)
          LEFT JOIN api_keys a ON a.prefix = u.prefix
         ORDER BY a.workspace_id NULLS LAST, a.id NULLS LAST, u.ord
      LOOP
        RETURN QUERY SELECT r.ord, f.* FROM weft_authenticate_request(r.prefix, r.secret_hash, p_window_seconds, p_default_workspace_requests, p_default_key_requests) f;
      END LOOP;
    END $$`;
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(singleRequest(true));
  await knex.raw(batchRequests());
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS weft_authenticate_requests(text[], text[], integer, integer, integer)');
  await knex.raw(singleRequest(false));
}
