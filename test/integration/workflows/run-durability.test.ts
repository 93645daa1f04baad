import assert from 'node:assert/strict';
import { workspaceSchema } from '../../../plugins/managed-table/storage';
import { env } from '../../support/environment';
import { BUILT_START, killHard, startScript } from '../../support/processes';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, runHeartbeatTimeouts, pipelineTenant, tableDestination, waitForRun } from '../../support/pipelines';

describe('A run whose worker dies', function () {
  this.timeout(240_000);
  let api: EventsApi;

  before(async () => {
    api = await new EventsApi().start();
  });
  after(async () => {
    await api.close();
    await env().startWorker();
  });

  it('survives SIGKILL mid-run: the retry resumes after the last heartbeated page and writes every record exactly once', async () => {
    const t = await pipelineTenant(api.baseUrl);
    api.records = EventsApi.events(3000);
    const source = await eventsSource(t, api, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 50 } });
    // No primary key: a record staged twice would show up as a second row.
    const destination = await tableDestination(t, 'durable_events');
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'append' }));

    // Only a separate worker process polls the queue, so the kill hits the run's activity.
    await env().stopWorker();
    // Its runs' next workflow task waits for it 1 s once it is killed, not 10, before the test's worker takes it.
    const worker = await startScript(BUILT_START, ['worker'], { WEFT_WORKER_STICKY_TIMEOUT_MS: '1000' }, /worker: polling/, 120_000);
    api.delayMs = 60;
    // The dead attempt is retried once its heartbeat times out: 6 s for this run (15 s by default),
    // which a stall of the test worker's event loop (shared with mocha) does not reach (remote-waits.test.ts).
    const restoreHeartbeatTimeout = runHeartbeatTimeouts(6000);
    const queued = await launch(t, pipeline.id).finally(restoreHeartbeatTimeout);
    const midway = await waitForRun(t, queued.id, (run) => run.nodes[0].recordsRead >= 600, 60_000);
    assert.equal(midway.status, 'running');
    await killHard(worker);
    const readAtKill = api.received.length;

    await env().startWorker();
    api.delayMs = 0;
    const run = await waitForRun(t, queued.id, undefined, 120_000);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    assert.ok(api.received.length > readAtKill, 'the new worker read the rest');

    const pages = api.received.filter((r) => r.path === '/events').map((r) => Number(r.query.page));
    const repeated = [...new Set(pages.filter((page, i) => pages.indexOf(page) !== i))];
    assert.ok(repeated.length > 0, 'pages after the last heartbeat were read again');
    assert.equal(pages.filter((page) => page === 1).length, 1, 'the retry resumed from its heartbeat, not from the first page');

    const { rows } = await env().db.raw(`SELECT count(*)::int AS n, count(DISTINCT data->>'id')::int AS ids FROM "${workspaceSchema(t.ws.workspaceId)}".durable_events WHERE valid_to IS NULL`);
    assert.deepEqual(rows[0], { n: 3000, ids: 3000 }, 'every record exactly once');
    assert.equal(run.nodes.find((n: any) => n.nodeId === 'src').recordsRead, 3000);
    assert.equal(run.nodes.find((n: any) => n.nodeId === 'dst').recordsWritten, 3000);
    const history = await env().temporal.workflow.getHandle(run.workflow.workflowId).fetchHistory();
    const timedOut = history.events?.filter((e) => e.activityTaskTimedOutEventAttributes) ?? [];
    const retried = history.events?.some((e) => (e.activityTaskStartedEventAttributes?.attempt ?? 1) > 1);
    assert.ok(timedOut.length > 0 || retried, 'Temporal saw the dead attempt and retried it');
  });
});
