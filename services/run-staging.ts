import type { Executor } from '../db/connection';
import type { StagedRows } from '../plugins/capability';
import type { SqlParams } from '../plugins/sql/builder';

/**
 * A run's records between the source reads and the commit, in pipeline_run_rows. A record's place
 * is (source node, page, ordinal): re-staging a page after a retry replaces it, never doubles it.
 */
export interface StagedRecord {
  page: number;
  ordinal: number;
  key: string | null;
  data: Record<string, unknown>;
}

/** Stages one page's records for one destination (inside the page's transaction). */
export async function stageRecords(db: Executor, runId: string, destinationId: string, sourceId: string, records: StagedRecord[]): Promise<void> {
  if (!records.length) return;
  const rows = JSON.stringify(records.map((r) => ({ page: r.page, ordinal: r.ordinal, row_key: r.key, data: r.data })));
  await db.raw(
    `INSERT INTO pipeline_run_rows (run_id, node_id, source_node_id, page, ordinal, row_key, data)
     SELECT ?, ?, ?, r.page, r.ordinal, r.row_key, r.data FROM jsonb_to_recordset(?::jsonb) AS r(page int, ordinal int, row_key text, data jsonb)
     ON CONFLICT DO NOTHING`,
    [runId, destinationId, sourceId, rows],
  );
}

/** Forgets what a source staged from `fromPage` on (its pages and the dedupe keys they passed): a retry reads them again. */
export async function unstageFrom(db: Executor, runId: string, sourceId: string, fromPage: number): Promise<void> {
  await db.raw('DELETE FROM pipeline_run_rows WHERE run_id = ? AND source_node_id = ? AND page >= ?', [runId, sourceId, fromPage]);
  await db.raw('DELETE FROM pipeline_run_keys WHERE run_id = ? AND source_node_id = ? AND page >= ?', [runId, sourceId, fromPage]);
}

export async function discardStaging(db: Executor, runId: string): Promise<void> {
  await db.raw('DELETE FROM pipeline_run_rows WHERE run_id = ?', [runId]);
  await db.raw('DELETE FROM pipeline_run_keys WHERE run_id = ?', [runId]);
}

export interface KeyedRecord {
  key: string;
  page: number;
  ordinal: number;
}

/**
 * Which of a page's records (already unique by key within the page) pass a dedupe node: those whose
 * key no earlier record of the run passed. The first record stays the one that passed, so a retried
 * page passes the same records again.
 */
export async function passDedupe(db: Executor, runId: string, nodeId: string, sourceId: string, records: KeyedRecord[]): Promise<Set<number>> {
  if (!records.length) return new Set();
  const { rows } = await db.raw<{ rows: Array<{ ordinal: number; first: boolean }> }>(
    `WITH given AS (SELECT * FROM jsonb_to_recordset(?::jsonb) AS g(key text, page int, ordinal int)),
          claimed AS (
            INSERT INTO pipeline_run_keys (run_id, node_id, key, source_node_id, page, ordinal)
            SELECT ?, ?, g.key, ?, g.page, g.ordinal FROM given g
            -- Keys in one order: two sources' pages claiming the same keys never deadlock.
            ORDER BY g.key
            ON CONFLICT (run_id, node_id, key) DO UPDATE SET key = EXCLUDED.key
            RETURNING key, source_node_id, page, ordinal)
     SELECT g.ordinal, (c.source_node_id = ? AND c.page = g.page AND c.ordinal = g.ordinal) AS first
       FROM given g JOIN claimed c ON c.key = g.key`,
    [JSON.stringify(records), runId, nodeId, sourceId, sourceId],
  );
  return new Set(rows.filter((row) => row.first).map((row) => row.ordinal));
}

/** Staged rows of one destination as the capabilities read them at commit. */
export function stagedRows(db: Executor, runId: string, destinationId: string): StagedRows {
  const relation = (params: SqlParams, { latestPerKey }: { latestPerKey: boolean }) => {
    const where = `run_id = ${params.add(runId)}::uuid AND node_id = ${params.add(destinationId)}`;
    return latestPerKey
      ? `SELECT DISTINCT ON (row_key) row_key, data FROM pipeline_run_rows WHERE ${where} ORDER BY row_key, source_node_id DESC, page DESC, ordinal DESC`
      : `SELECT row_key, data FROM pipeline_run_rows WHERE ${where}`;
  };
  return {
    relation,
    async *batches(size, { latestPerKey }) {
      // Keyset paging (by key, or by place), so a batch never holds more than `size` records.
      let after: [string, string, number, number] | undefined;
      for (;;) {
        const { rows } = latestPerKey
          ? await db.raw<{ rows: StagedRow[] }>(
            `SELECT DISTINCT ON (row_key) source_node_id, page, ordinal, row_key, data FROM pipeline_run_rows
              WHERE run_id = ? AND node_id = ? AND row_key > ? ORDER BY row_key, source_node_id DESC, page DESC, ordinal DESC LIMIT ?`,
            [runId, destinationId, after?.[0] ?? '', size],
          )
          : await db.raw<{ rows: StagedRow[] }>(
            `SELECT source_node_id, page, ordinal, row_key, data FROM pipeline_run_rows
              WHERE run_id = ? AND node_id = ? AND (source_node_id, page, ordinal) > (?, ?, ?) ORDER BY source_node_id, page, ordinal LIMIT ?`,
            [runId, destinationId, after?.[1] ?? '', after?.[2] ?? -1, after?.[3] ?? -1, size],
          );
        if (rows.length) yield rows.map((row) => ({ key: row.row_key, data: row.data }));
        if (rows.length < size) return;
        const last = rows[rows.length - 1];
        after = [last.row_key ?? '', last.source_node_id, last.page, last.ordinal];
      }
    },
  };
}

interface StagedRow {
  source_node_id: string;
  page: number;
  ordinal: number;
  row_key: string | null;
  data: Record<string, unknown>;
}
