import { randomUUID } from 'node:crypto';
import type { Executor } from '../../db/connection';
import type { StagedRows } from '../../plugins/capability';
import { SqlParams, toKnexBindings } from '../../plugins/sql/builder';

/**
 * A run's records between the source reads and the commit, in pipeline_run_rows. A record's place
 * is (source node, page, ordinal): re-staging a page after a retry replaces it, never doubles it.
 *
 * A page's records for one destination are staged as one row (ordinal PAGE_ROW, data
 * {"keys": [...], "records": [...]}, a record's ordinal being its index in the page), not as a row
 * per record: one tuple, one primary-key entry and one foreign-key check per page instead of per
 * record, and the page's JSON is compressed as one value. The commit reads them back record by
 * record (stagedRows), in staging order. Rows with ordinal >= 0 are a record each, as earlier
 * versions staged them (a run in flight across an upgrade has both), and are read the same way.
 */
export interface StagedRecord {
  key: string | null;
  data: Record<string, unknown>;
}

/** The ordinal of a row that holds a whole page. */
const PAGE_ROW = -1;

/**
 * Stages one page's records for one destination, as one row (inside the page's transaction, which
 * holds the node: see holdNode). A page is never staged twice: a retry unstages from its resume
 * page first and a superseded attempt is fenced out, so a plain INSERT suffices, and a page staged
 * twice would fail loudly rather than keep either copy silently.
 */
export async function stageRecords(db: Executor, runId: string, destinationId: string, sourceId: string, page: number, records: StagedRecord[]): Promise<void> {
  if (!records.length) return;
  const data = JSON.stringify({ keys: records.map((r) => r.key), records: records.map((r) => r.data) });
  await db.raw(
    'INSERT INTO pipeline_run_rows (run_id, node_id, source_node_id, page, ordinal, row_key, data) VALUES (?, ?, ?, ?, ?, NULL, ?::jsonb)',
    [runId, destinationId, sourceId, page, PAGE_ROW, data],
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

/**
 * Every record staged for one destination, with its place, in staging order (source node, page,
 * ordinal): the staged rows in primary-key order, each page row unnested (its function arguments
 * are evaluated once per row, so a page is decompressed once) and each record row as a page of one.
 * The nested loop over the ordered rows keeps their order, so no sort of the records is needed.
 * Columns source_node_id, page, ordinal, row_key, data.
 */
function placedRecords(params: SqlParams, runId: string, destinationId: string): string {
  const paged = `r.ordinal = ${PAGE_ROW}`;
  return `SELECT r.source_node_id, r.page, CASE WHEN ${paged} THEN (e.position - 1)::int ELSE r.ordinal END AS ordinal, e.row_key, e.data
      FROM (SELECT * FROM pipeline_run_rows WHERE run_id = ${params.add(runId)}::uuid AND node_id = ${params.add(destinationId)} ORDER BY source_node_id, page, ordinal) r
      CROSS JOIN LATERAL ROWS FROM (
        jsonb_array_elements(CASE WHEN ${paged} THEN r.data -> 'records' ELSE jsonb_build_array(r.data) END),
        jsonb_array_elements_text(CASE WHEN ${paged} THEN r.data -> 'keys' ELSE jsonb_build_array(r.row_key) END)
      ) WITH ORDINALITY AS e(data, row_key, position)`;
}

/**
 * Staged rows of one destination as the capabilities read them at commit. `batches` streams them
 * (in staging order, or by key with latestPerKey) through a cursor of the commit's transaction
 * (`db` must be one): one query, fetched `size` records at a time, so a batch never holds more
 * than `size` records.
 */
export function stagedRows(db: Executor, runId: string, destinationId: string): StagedRows {
  const relation = (params: SqlParams, { latestPerKey }: { latestPerKey: boolean }) => {
    const placed = placedRecords(params, runId, destinationId);
    return latestPerKey
      ? `SELECT DISTINCT ON (row_key) row_key, data FROM (${placed}) s ORDER BY row_key, source_node_id DESC, page DESC, ordinal DESC`
      : `SELECT row_key, data FROM (${placed}) s`;
  };
  return {
    relation,
    async *batches(size, { latestPerKey }) {
      if (!('isTransaction' in db && db.isTransaction)) throw new Error('stagedRows(...).batches reads through a cursor: call it inside the commit\'s transaction.');
      const params = new SqlParams();
      const { sql, bindings } = toKnexBindings(relation(params, { latestPerKey }), params.values);
      const cursor = `weft_staged_${randomUUID().replace(/-/g, '')}`;
      await db.raw(`DECLARE ${cursor} NO SCROLL CURSOR FOR ${sql}`, bindings as never[]);
      try {
        for (;;) {
          const { rows } = await db.raw<{ rows: Array<{ row_key: string | null; data: Record<string, unknown> }> }>(`FETCH FORWARD ${Math.max(1, Math.floor(size))} FROM ${cursor}`);
          if (rows.length) yield rows.map((row) => ({ key: row.row_key, data: row.data }));
          if (rows.length < size) return;
        }
      } finally {
        await db.raw(`CLOSE ${cursor}`).catch(() => undefined);
      }
    },
  };
}
