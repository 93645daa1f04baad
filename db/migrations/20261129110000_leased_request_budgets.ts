import type { Knex } from 'knex';

// Leased request budgets (services/tenancy/request-budgets.ts). An API process that already knows
// a key leases a share of what remains in both of its buckets (the workspace's and the key's) for
// the current window and spends it locally, so most requests make no round trip, and hands back
// what it leaves unused. The counters stay the ones weft_authenticate_request counts in: leased is
// counted as used, so across every process no bucket admits more than its limit in a window. A
// bucket with less than p_min_remaining left is not leased from ('small', nothing counted): its
// requests are counted one by one by weft_authenticate_requests, exactly as without leases.

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION weft_lease_requests(
      p_workspace_id uuid, p_key_id uuid, p_window_seconds integer, p_workspace_limit integer, p_key_limit integer, p_share integer, p_max_lease integer, p_min_remaining integer
    ) RETURNS TABLE (outcome text, granted integer, used_workspace integer, used_key integer, window_start bigint, reset_ms bigint) LANGUAGE plpgsql AS $$
    #variable_conflict use_column
    DECLARE
      now_ms bigint := floor(extract(epoch FROM clock_timestamp()) * 1000);
      win bigint := now_ms / (p_window_seconds * 1000);
      ws_bucket text := 'w:' || p_workspace_id;
      key_bucket text := 'k:' || p_key_id;
      lease integer;
    BEGIN
      window_start := win;
      reset_ms := (win + 1) * p_window_seconds * 1000 - now_ms;
      -- Both rows locked, the workspace's first: the lock order of every request-path statement.
      INSERT INTO request_counters AS c (bucket, window_start, used) VALUES (ws_bucket, win, 0)
      ON CONFLICT (bucket) DO UPDATE
         SET used = CASE WHEN c.window_start >= excluded.window_start THEN c.used ELSE 0 END,
             window_start = greatest(c.window_start, excluded.window_start)
      RETURNING c.used INTO used_workspace;
      INSERT INTO request_counters AS c (bucket, window_start, used) VALUES (key_bucket, win, 0)
      ON CONFLICT (bucket) DO UPDATE
         SET used = CASE WHEN c.window_start >= excluded.window_start THEN c.used ELSE 0 END,
             window_start = greatest(c.window_start, excluded.window_start)
      RETURNING c.used INTO used_key;
      granted := 0;
      lease := least(p_key_limit - used_key, p_workspace_limit - used_workspace);
      IF lease < p_min_remaining THEN
        outcome := 'small';
        RETURN NEXT;
        RETURN;
      END IF;
      -- A share of what remains: the request itself and those the process spends locally.
      lease := least(lease / p_share, p_max_lease);
      UPDATE request_counters SET used = used + lease WHERE bucket IN (ws_bucket, key_bucket);
      used_workspace := used_workspace + lease;
      used_key := used_key + lease;
      granted := lease;
      outcome := 'ok';
      RETURN NEXT;
    END $$`);
  await knex.raw(`
    CREATE FUNCTION weft_return_requests(p_workspace_id uuid, p_key_id uuid, p_window_start bigint, p_count integer) RETURNS void LANGUAGE sql AS $$
      -- The workspace's row first, as everywhere; a window that has turned keeps its count.
      UPDATE request_counters SET used = greatest(used - p_count, 0) WHERE bucket = 'w:' || p_workspace_id AND window_start = p_window_start;
      UPDATE request_counters SET used = greatest(used - p_count, 0) WHERE bucket = 'k:' || p_key_id AND window_start = p_window_start;
    $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('DROP FUNCTION IF EXISTS weft_return_requests(uuid, uuid, bigint, integer)');
  await knex.raw('DROP FUNCTION IF EXISTS weft_lease_requests(uuid, uuid, integer, integer, integer, integer, integer, integer)');
}
