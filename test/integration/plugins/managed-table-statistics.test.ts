import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { managedTableCapability as capability } from '../../../plugins/managed-table';
import { workspaceSchema } from '../../../plugins/managed-table/storage';
import type { CapabilityContext } from '../../../plugins/capability';
import { env } from '../../support/environment';
import { newManagedTableContext } from '../../support/fixtures';
import { until } from '../../support/polling';
import { createPipeline, eventsSource, launch, linearDocument, tableDestination, useEventsApi, waitForRun } from '../../support/pipelines';

// Planner statistics after commits (plugins/managed-table/statistics.ts): a commit that changes a
// large share of a table is followed by an ANALYZE of it; a small one is left to autovacuum.

interface TableStatistics {
  /** The planner's row count (pg_class.reltuples: -1 before the first ANALYZE or VACUUM). */
  rows: number;
  /** ANALYZE statements run on the table (autovacuum's count apart). */
  analyses: number;
  /** The share of record versions still current (no valid_to: pg_stats' null_frac), as ANALYZE sampled it, or null before one. */
  currentShare: number | null;
}

async function statisticsOf(schema: string, table: string): Promise<TableStatistics> {
  const { rows } = await env().db.raw<{ rows: Array<{ rows: number; analyses: string; nulls: number | null }> }>(
    `SELECT c.reltuples::float8 AS rows, s.analyze_count AS analyses,
            (SELECT null_frac FROM pg_stats WHERE schemaname = ? AND tablename = ? AND attname = 'valid_to') AS nulls
       FROM pg_class c JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = to_regclass(?)`,
    [schema, table, `"${schema}"."${table}"`],
  );
  return { rows: rows[0].rows, analyses: Number(rows[0].analyses), currentShare: rows[0].nulls };
}

const analysedWith = (rows: number, analyses: number) => (stats: TableStatistics) => stats.rows === rows && stats.analyses === analyses;

describe('managed table statistics after commits', () => {
  let ctx: CapabilityContext;
  let schema: string;

  before(async () => {
    ({ ctx, schema } = await newManagedTableContext());
  });

  after(() => ctx.managedTables.settle());

  /** Commits `count` generated records from `from` on, staged as a run stages them, inside a transaction of the caller's as a run's commit does. */
  async function commit(table: string, from: number, count: number): Promise<void> {
    const relation = () => `SELECT jsonb_build_array(i)::text AS row_key, jsonb_build_object('id', i, 'name', 'record ' || i) AS data FROM generate_series(${from}, ${from + count - 1}) i`;
    const written = await env().db.transaction((trx) => capability.commitStagedWrite!({ ...ctx, db: trx }, { table, primaryKey: ['id'] }, {
      mode: 'upsert',
      rows: { relation, batches: () => { throw new Error('a managed table commits from the relation'); } },
      provenance: { kind: 'run', id: randomUUID() },
    }));
    assert.equal(written.affected, count);
  }

  it('analyses a table after a commit past autovacuum\'s threshold, and leaves a small one to autovacuum', async () => {
    // The first commit of 5,000 records: the table was never analysed (no rows to the planner).
    await commit('orders', 1, 5000);
    const first = await until('the first commit analysed', async () => {
      const stats = await statisticsOf(schema, 'orders');
      return analysedWith(5000, 1)(stats) && stats;
    });
    assert.equal(first.currentShare, 1);

    // 200 changed records of 5,000 are under autovacuum's 50 + 10%: no ANALYZE. Refreshes run in
    // commit order, so once a later large commit's table is analysed, the small one's was decided.
    await commit('orders', 4801, 200);
    await commit('customers', 1, 300);
    await until('the customers analysed', async () => analysedWith(300, 1)(await statisticsOf(schema, 'customers')));
    assert.equal((await statisticsOf(schema, 'orders')).analyses, 1);

    // 1,000 more (new keys) are past it: the 200 upserted versions closed and the 1,000 new ones are counted.
    await commit('orders', 5001, 1000);
    const after = await until('the larger commit analysed', async () => {
      const stats = await statisticsOf(schema, 'orders');
      return analysedWith(6200, 2)(stats) && stats;
    });
    // 6,000 of the 6,200 versions are current (null_frac is a float4).
    assert.ok(Math.abs(after.currentShare! - 6000 / 6200) < 1e-6, String(after.currentShare));
  });

  it('analyses nothing for a commit that rolled back', async () => {
    await commit('refunds', 1, 100);
    await until('the refunds analysed', async () => analysedWith(100, 1)(await statisticsOf(schema, 'refunds')));
    await assert.rejects(env().db.transaction(async (trx) => {
      const relation = () => `SELECT jsonb_build_array(i)::text AS row_key, jsonb_build_object('id', i) AS data FROM generate_series(101, 10100) i`;
      await capability.commitStagedWrite!({ ...ctx, db: trx }, { table: 'refunds', primaryKey: ['id'] }, { mode: 'append', rows: { relation, batches: () => { throw new Error('unused'); } }, provenance: { kind: 'run', id: randomUUID() } });
      throw new Error('rolled back');
    }), /rolled back/);
    await commit('customers', 301, 3000);
    await until('the customers analysed again', async () => analysedWith(3300, 2)(await statisticsOf(schema, 'customers')));
    assert.deepEqual(await statisticsOf(schema, 'refunds'), { rows: 100, analyses: 1, currentShare: 1 });
  });

  describe('through a pipeline run', () => {
    const records = Array.from({ length: 2000 }, (_, i) => ({ id: i + 1, updated_at: new Date(Date.UTC(2024, 0, 1, 0, 0, i)).toISOString(), amount: i, status: i % 2 ? 'open' : 'closed' }));
    const events = useEventsApi(() => records);

    it('leaves the destination table analysed after the run\'s commit', async () => {
      const { t, api } = events;
      const source = await eventsSource(t, api, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 500 } });
      const destination = await tableDestination(t, 'events_analysed', ['id']);
      const pipeline = await createPipeline(t, linearDocument(source, destination));
      const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
      // The worker's runtime analyses the table after the commit, while the workflow ends.
      const stats = await until('the destination analysed', async () => {
        const seen = await statisticsOf(workspaceSchema(t.ws.workspaceId), 'events_analysed');
        return analysedWith(2000, 1)(seen) && seen;
      });
      assert.equal(stats.currentShare, 1);
    });
  });
});
