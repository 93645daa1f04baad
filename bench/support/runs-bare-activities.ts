/**
 * Activities of the runs bench's bare workflow (bench/support/runs-bare-workflow.ts). The upsert is
 * idempotent (ON CONFLICT on the key), as a retried activity must be.
 */
import type pg from 'pg';

export interface EventRecord {
  id: number;
  updated_at: string;
  amount: number;
  status: string;
}

export function createBareActivities(pool: pg.Pool) {
  return {
    async readPage(url: string): Promise<EventRecord[]> {
      const response = await fetch(url, { headers: { Accept: 'application/json' } });
      if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
      const body = (await response.json()) as { data: EventRecord[] };
      return body.data;
    },
    async transform(records: EventRecord[]): Promise<Array<EventRecord & { amount_with_tax: number }>> {
      return records.map((record) => ({ ...record, amount_with_tax: record.amount * 1.2 }));
    },
    async upsertRows(table: string, rows: Array<EventRecord & { amount_with_tax: number }>): Promise<number> {
      const result = await pool.query(
        `INSERT INTO bench_bare.${table} (id, updated_at, amount, status, amount_with_tax)
         SELECT id, updated_at, amount, status, amount_with_tax FROM jsonb_to_recordset($1::jsonb)
           AS r(id integer, updated_at timestamptz, amount numeric, status text, amount_with_tax numeric)
         ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at, amount = EXCLUDED.amount, status = EXCLUDED.status, amount_with_tax = EXCLUDED.amount_with_tax`,
        [JSON.stringify(rows)],
      );
      return result.rowCount ?? 0;
    },
  };
}

export type BareActivities = ReturnType<typeof createBareActivities>;
