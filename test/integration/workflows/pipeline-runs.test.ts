import assert from 'node:assert/strict';
import { within } from '../../support/polling';
import { workspaceSchema } from '../../../plugins/managed-table/storage';
import { env } from '../../support/environment';
import {
  createPipeline,
  EventsApi,
  eventsSource,
  getRun,
  launch,
  linearDocument,
  PipelineTenant,
  tableDestination,
  tableRecords,
  useEventsApi,
  waitForRun,
} from '../../support/pipelines';

describe('Pipeline runs on Temporal', function () {
  this.timeout(120_000);
  const fixture = useEventsApi(() => EventsApi.events(120));
  let api: EventsApi;
  let t: PipelineTenant;
  beforeEach(() => ({ api, t } = fixture));

  it('moves records from a paginated HTTP API into a managed table, with provenance, per-node results and a findable workflow', async () => {
    const source = await eventsSource(t, api);
    const destination = await tableDestination(t, 'events_e2e', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, {
      writeMode: 'upsert',
      transforms: [
        { type: 'filter', where: [{ field: 'status', op: 'eq', value: 'open' }] },
        { type: 'compute', fields: [{ name: 'amount_with_tax', expression: 'amount * 1.2' }] },
        { type: 'select', fields: ['id', 'amount', 'amount_with_tax', 'updated_at'], rename: { updated_at: 'changed_at' } },
      ],
    }));
    const queued = await launch(t, pipeline.id);
    assert.equal(queued.status, 'queued');
    assert.equal(queued.pipelineId, pipeline.id);
    assert.equal(queued.versionId, pipeline.versionId);
    assert.equal(queued.trigger, 'api');
    assert.equal(queued.workflow.workflowId, `weft-run-${queued.id}`);

    const run = await waitForRun(t, queued.id);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    const byId = Object.fromEntries(run.nodes.map((n: any) => [n.nodeId, n]));
    assert.equal(byId.src.recordsRead, 120);
    assert.equal(byId.src.pages, 6, '120 records at 25 per page, then the empty page that ends page pagination');
    assert.equal(byId.src.stopReason, 'empty_page');
    assert.equal(byId.t1.recordsIn, 120);
    assert.equal(byId.t1.recordsOut, 60);
    assert.equal(byId.dst.recordsIn, 60);
    assert.equal(byId.dst.recordsWritten, 60);
    assert.ok(byId.dst.snapshot?.id, 'the destination reports the snapshot its commit made');
    assert.ok(run.startedAt && run.finishedAt && run.syncTime);

    const rows = await tableRecords(t, destination);
    assert.equal(rows.length, 60);
    assert.deepEqual(rows[0], { id: 1, amount: 10, amount_with_tax: 12, changed_at: api.records[0].updated_at });
    const provenance = await env().db.raw(`SELECT DISTINCT produced_by_kind AS kind, produced_by_id AS id FROM "${workspaceSchema(t.ws.workspaceId)}".events_e2e`);
    assert.deepEqual(provenance.rows, [{ kind: 'run', id: run.id }]);

    // Temporal's visibility store is eventually consistent: a closed workflow reaches it shortly after
    // it closes, so the search is waited for (up to 20 s), and must then find exactly this run.
    const searchedBy = async () => {
      const found: string[] = [];
      for await (const execution of env().temporal.workflow.list({ query: `PipelineId='${pipeline.id}' AND ExecutionStatus='Completed'` })) found.push(execution.workflowId);
      return found;
    };
    const found = await within(20_000, searchedBy, (runs) => runs.length > 0, 200);
    assert.deepEqual(found, [run.workflow.workflowId], 'the run is found by its PipelineId search attribute');
    const described = await env().temporal.workflow.getHandle(run.workflow.workflowId).describe();
    assert.equal(described.status.name, 'COMPLETED');
    assert.deepEqual(described.searchAttributes.WorkspaceId, [t.ws.workspaceId]);
    assert.deepEqual(described.searchAttributes.ProjectId, [t.projectId]);
  });

  it('keeps history small: no record travels through the workflow', async () => {
    api.records = EventsApi.events(400);
    const source = await eventsSource(t, api);
    const destination = await tableDestination(t, 'events_history', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination));
    const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    const history = await env().temporal.workflow.getHandle(run.workflow.workflowId).fetchHistory();
    const size = Buffer.byteLength(JSON.stringify(history));
    assert.ok(size < 64 * 1024, `history is ${size} bytes for 400 records`);
    assert.ok(!JSON.stringify(history).includes(api.records[200].updated_at), 'a record value appears in history');
  });

  it('fails a run with error evidence when the remote API keeps failing, and commits nothing', async () => {
    const source = await eventsSource(t, api);
    const destination = await tableDestination(t, 'events_failing', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination));
    api.failNext = 100;
    const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
    assert.equal(run.status, 'failed');
    assert.equal(run.error.nodeId, 'src');
    assert.equal(run.error.code, 'upstream_unavailable');
    assert.match(run.error.message, /answered HTTP 500/);
    assert.equal(run.error.remoteStatus, 500);
    assert.equal(run.nodes.find((n: any) => n.nodeId === 'src').status, 'failed');
    assert.deepEqual(await tableRecords(t, destination), []);
    const staged = await env().db('pipelineRunRows').where({ runId: run.id }).count('* as n').first();
    assert.equal(Number(staged?.n), 0, 'staged records are dropped');
    assert.ok((await getRun(t, run.id)).finishedAt);
  });

  it('merges two sources into one destination through dedupe and cast, deduplicating across pages and sources', async () => {
    const first = await eventsSource(t, api);
    const second = await eventsSource(t, api, { request: { url: `${api.baseUrl}events`, query: { copy: '2' } } });
    const destination = await tableDestination(t, 'events_merged', ['id']);
    const pipeline = await createPipeline(t, {
      nodes: [
        { id: 'a', type: 'source', endpointId: first },
        { id: 'b', type: 'source', endpointId: second },
        { id: 'unique', type: 'dedupe', key: ['id'] },
        { id: 'typed', type: 'cast', fields: { amount: 'decimal', id: 'string' } },
        { id: 'dst', type: 'destination', endpointId: destination, writeMode: 'append' },
      ],
      edges: [{ from: 'a', to: 'unique' }, { from: 'b', to: 'unique' }, { from: 'unique', to: 'typed' }, { from: 'typed', to: 'dst' }],
    });
    const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    const byId = Object.fromEntries(run.nodes.map((n: any) => [n.nodeId, n]));
    assert.equal(byId.a.recordsRead + byId.b.recordsRead, 240);
    assert.equal(byId.unique.recordsIn, 240, 'the dedupe node counts what both sources delivered');
    assert.equal(byId.unique.recordsOut, 120, 'each key passes once, whichever source read it first');
    assert.equal(byId.dst.recordsWritten, 120);
    const rows = await tableRecords(t, destination);
    assert.equal(rows.length, 120);
    assert.deepEqual(rows[0], { ...api.records[0], id: '1', amount: '10' });
  });
});
