import assert from 'node:assert/strict';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, tableDestination, useEventsApi, waitForRun } from '../../support/pipelines';
import { action, currentSnapshot, managedTable, putPolicy, writeTenant, WriteTenant } from '../../support/source-writes';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('A records read with provenance: what wrote each record', function () {
  this.timeout(90_000);

  describe('rows a pipeline run wrote', () => {
    const fixture = useEventsApi(() => EventsApi.events(30));

    it('name the run on every page the cursor reaches, and only when asked', async () => {
      const { t, api } = fixture;
      const destination = await tableDestination(t, `provenance_${Date.now()}`, ['id']);
      const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, api), destination));
      const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));

      const plain = await t.client.get(`/api/v1/data-endpoints/${destination}/records?limit=10`);
      assert.equal(plain.status, 200);
      assert.equal('provenance' in plain.body, false, 'provenance only when asked');

      const seen: unknown[] = [];
      let cursor: string | null = null;
      do {
        const res: any = await t.client.get(`/api/v1/data-endpoints/${destination}/records?limit=10&provenance=true${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal(res.body.provenance.length, res.body.data.length);
        for (const entry of res.body.provenance) {
          assert.deepEqual(Object.keys(entry).sort(), ['committedAt', 'id', 'kind']);
          assert.equal(entry.kind, 'run');
          assert.equal(entry.id, run.id);
          assert.match(entry.committedAt, ISO_UTC);
          // One run, one commit: the snapshot the read sees.
          assert.equal(entry.committedAt, res.body.metadata.snapshot.committedAt);
        }
        seen.push(...res.body.data);
        cursor = res.body.metadata.nextCursor;
        if (cursor) {
          // A cursor belongs to its parameters: provenance is one of them.
          const without = await t.client.get(`/api/v1/data-endpoints/${destination}/records?limit=10&cursor=${cursor}`);
          assert.equal(without.status, 422);
          assert.equal(without.body.code, 'cursor_parameters_changed');
        }
      } while (cursor);
      assert.equal(seen.length, 30);
    });

    it('are refused with a clear 422 where the capability keeps no provenance (http_dataset)', async () => {
      const { t, api } = fixture;
      const source = await eventsSource(t, api);
      const res = await t.client.get(`/api/v1/data-endpoints/${source}/records?provenance=true`);
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'provenance_not_supported');
      assert.match(res.body.message, /managed_table/);
    });
  });

  describe('rows governed writes wrote', () => {
    let t: WriteTenant;
    before(async () => {
      t = await writeTenant();
    });

    it('name each record version’s own write action, at the latest snapshot and at an earlier one', async () => {
      const endpointId = await managedTable(t);
      await putPolicy(t, endpointId);
      const first = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }, { id: 2, name: 'Bob' }] });
      const firstApplied = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, first);
      assert.equal(firstApplied.status, 200, JSON.stringify(firstApplied.body));
      const second = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 2, name: 'Bea' }] });
      const secondApplied = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, second);
      assert.equal(secondApplied.status, 200, JSON.stringify(secondApplied.body));

      const orderById = encodeURIComponent(JSON.stringify([{ field: 'id' }]));
      const read = async (extra: string) => {
        const res = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/records?provenance=true&orderBy=${orderById}${extra}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return res.body as { data: Array<{ id: number; name: string }>; provenance: Array<{ kind: string; id: string }> };
      };
      const latest = await read('');
      assert.deepEqual(latest.data.map((r) => r.name), ['Ada', 'Bea']);
      assert.deepEqual(latest.provenance.map((p) => [p.kind, p.id]), [['write', first.actionId], ['write', second.actionId]]);

      const before = await read(`&snapshotId=${firstApplied.body.writeAction.snapshotAfter.id}`);
      assert.deepEqual(before.data.map((r) => r.name), ['Ada', 'Bob']);
      assert.deepEqual(before.provenance.map((p) => p.id), [first.actionId, first.actionId]);

      // A filtered, narrowed read keeps data and provenance index for index.
      const where = encodeURIComponent(JSON.stringify([{ field: 'id', op: 'eq', value: 2 }]));
      const narrowed = await read(`&select=name&where=${where}`);
      assert.deepEqual(narrowed.data, [{ name: 'Bea' }]);
      assert.deepEqual(narrowed.provenance.map((p) => p.id), [second.actionId]);
    });
  });
});
