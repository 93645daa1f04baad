import assert from 'node:assert/strict';
import { SqlParams, toKnexBindings } from '../../../plugins/sql/builder';
import { stageRecords, stagedRows, unstageFrom } from '../../../services/pipelines/run-staging';
import { env } from '../../support/environment';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, PipelineTenant, tableDestination, useEventsApi, waitForRun } from '../../support/pipelines';

/**
 * The staging format: a page per row (services/pipelines/run-staging.ts), read back record by record in
 * staging order, next to the row-per-record rows earlier versions staged (a run in flight across an
 * upgrade has both). The rows hang off a real (finished) run, for the foreign key.
 */
describe('Run staging', function () {
  this.timeout(120_000);
  const fixture = useEventsApi(() => EventsApi.events(3));
  let t: PipelineTenant;
  let runId: string;

  before(async () => {
    t = fixture.t;
    const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, fixture.api), await tableDestination(t, 'staging_format', ['id'])));
    runId = (await waitForRun(t, (await launch(t, pipeline.id)).id)).id;
  });
  after(() => env().db('pipelineRunRows').where({ runId }).delete());

  const key = (id: number) => JSON.stringify([id]);
  const read = async (destination: string, latestPerKey: boolean) => {
    const params = new SqlParams();
    const { sql, bindings } = toKnexBindings(stagedRows(env().db, runId, destination).relation(params, { latestPerKey }), params.values);
    return (await env().db.raw(sql, bindings as never[])).rows as Array<{ row_key: string | null; data: { id?: number; v?: string } }>;
  };

  it('reads page rows and record rows back in staging order, the last staged record per key, and in cursor batches', async () => {
    const { db } = env();
    // Pages 1-2 as earlier versions staged them (a row per record), pages 3-12 as a row per page.
    for (const page of [1, 2]) {
      for (let ordinal = 0; ordinal < 3; ordinal++) {
        const id = page * 10 + ordinal;
        await db.raw('INSERT INTO pipeline_run_rows (run_id, node_id, source_node_id, page, ordinal, row_key, data) VALUES (?, ?, ?, ?, ?, ?, ?::jsonb)', [runId, 'dst', 'a', page, ordinal, key(id), JSON.stringify({ id, v: 'old' })]);
      }
    }
    for (let page = 3; page <= 12; page++) {
      await stageRecords(db, runId, 'dst', 'a', page, [0, 1, 2, 3].map((ordinal) => ({ key: key(page * 10 + ordinal), data: { id: page * 10 + ordinal, v: `p${page}` } })));
    }
    // A retry re-stages page 12; a second source repeats a key; a keyless destination.
    await unstageFrom(db, runId, 'a', 12);
    await stageRecords(db, runId, 'dst', 'a', 12, [{ key: key(30), data: { id: 30, v: 'again' } }, { key: key(121), data: { id: 121, v: 'p12' } }]);
    await stageRecords(db, runId, 'dst', 'b', 1, [{ key: key(31), data: { id: 31, v: 'from b' } }]);
    await stageRecords(db, runId, 'keyless', 'a', 1, [{ key: null, data: { v: 'x' } }, { key: null, data: { v: 'y' } }]);

    const all = await read('dst', false);
    const order = [10, 11, 12, 20, 21, 22, ...Array.from({ length: 9 }, (_, k) => [0, 1, 2, 3].map((i) => (k + 3) * 10 + i)).flat(), 30, 121, 31];
    assert.deepEqual(all.map((r) => r.data.id), order, 'staging order: source, page, ordinal');
    assert.ok(all.every((r) => r.row_key === key(r.data.id!)), 'each record keeps its key');

    const latest = await read('dst', true);
    assert.equal(latest.length, new Set(order).size);
    const byKey = new Map(latest.map((r) => [r.row_key, r.data.v]));
    assert.equal(byKey.get(key(30)), 'again', 'a later page wins');
    assert.equal(byKey.get(key(31)), 'from b', 'a later source wins');
    assert.deepEqual(await read('keyless', false), [{ row_key: null, data: { v: 'x' } }, { row_key: null, data: { v: 'y' } }]);

    for (const latestPerKey of [false, true]) {
      const batches: number[][] = [];
      await db.transaction(async (trx) => {
        for await (const batch of stagedRows(trx, runId, 'dst').batches(7, { latestPerKey })) batches.push(batch.map((r) => (r.data as { id: number }).id));
      });
      assert.ok(batches.every((batch) => batch.length <= 7));
      assert.deepEqual(batches.flat(), (latestPerKey ? latest : all).map((r) => r.data.id));
    }
  });
});
