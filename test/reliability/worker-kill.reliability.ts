import assert from 'node:assert/strict';
import { workspaceSchema } from '../../plugins/managed-table/storage';
import { env } from '../support/environment';
import { BUILT_START, killHard, RunningScript, startScript } from '../support/processes';
import { reliabilitySeed, seededRandom } from './support/seeded-random';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, runHeartbeatTimeouts, pipelineTenant, tableDestination, waitForRun } from '../support/pipelines';

const ROUNDS = 10;
const RECORDS_PER_ROUND = 300;
const PAGE_SIZE = 20;

describe('Worker killed during ingestion, at 10 random points', function () {
  this.timeout(20 * 60_000);
  const seed = reliabilitySeed();
  const random = seededRandom(seed);
  let api: EventsApi;
  let worker: RunningScript | undefined;
  let restoreHeartbeatTimeout: () => void = () => undefined;

  before(async () => {
    api = await new EventsApi().start();
    // Only worker processes this test starts and kills poll the queue.
    await env().stopWorker();
    // A killed worker's extraction or commit is retried once its heartbeat times out: 3 s for the
    // runs this file's API launches (15 s and 30 s by default). The worker is a process of its own,
    // so no stall of mocha's event loop delays its heartbeats; should a loaded machine delay one
    // anyway, the attempt is retried, which is what this test is about.
    restoreHeartbeatTimeout = runHeartbeatTimeouts(3000);
  });
  after(async () => {
    restoreHeartbeatTimeout();
    if (worker) await killHard(worker).catch(() => undefined);
    await api.close();
    await env().startWorker();
  });

  // A run's next workflow task waits for the killed worker (its sticky queue) 1 s, not 10, before the new one takes it.
  const startWorker = () => startScript(BUILT_START, ['worker'], { WEFT_WORKER_STICKY_TIMEOUT_MS: '1000' }, /worker: polling/, 180_000);

  it(`every run succeeds with exact counts, no duplicates, and each incremental position advanced once (seed ${seed})`, async () => {
    const t = await pipelineTenant(api.baseUrl);
    const source = await eventsSource(t, api, {
      window: { startParameter: 'since', endParameter: 'until', lookback: 'PT6H' },
      pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: PAGE_SIZE },
    });
    // No primary key and append: a record written twice would be a second row.
    const destination = await tableDestination(t, 'killed_worker_events');
    const pipeline = await createPipeline(t, linearDocument(source, destination, { mode: 'incremental', writeMode: 'append' }));
    const table = `"${workspaceSchema(t.ws.workspaceId)}".killed_worker_events`;

    worker = await startWorker();
    let previousEnd: string | null = null;
    let nextId = 1;
    for (let round = 1; round <= ROUNDS; round++) {
      // New events inside this round's window: after the last window's end, before this launch.
      const from = previousEnd ? Date.parse(previousEnd) + 1 : Date.now() - 3600_000;
      const until = Date.now() - 1;
      api.records = [...api.records, ...Array.from({ length: RECORDS_PER_ROUND }, (_, i) => ({
        id: nextId + i,
        updated_at: new Date(from + Math.floor(((until - from) * i) / RECORDS_PER_ROUND)).toISOString(),
        amount: nextId + i,
        status: 'open',
      }))];
      nextId += RECORDS_PER_ROUND;
      api.received = [];
      api.delayMs = 40;

      const run = await launch(t, pipeline.id);
      // A kill point anywhere from before the first page to after the last one (the commit).
      const killAfterPages = Math.floor(random() * (RECORDS_PER_ROUND / PAGE_SIZE + 3));
      const deadline = Date.now() + 120_000;
      while (api.received.filter((r) => r.path === '/events').length < killAfterPages && Date.now() < deadline) {
        const current = await waitForRun(t, run.id, () => true);
        if (['succeeded', 'failed', 'canceled'].includes(current.status)) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await killHard(worker);
      worker = await startWorker();
      api.delayMs = 0;

      const ended = await waitForRun(t, run.id, undefined, 180_000);
      const context = `round ${round}, killed after ${killAfterPages} pages, seed ${seed}`;
      assert.equal(ended.status, 'succeeded', `${context}: ${JSON.stringify(ended.error)}`);
      const sourceNode = ended.nodes.find((n: any) => n.nodeId === 'src');
      assert.equal(sourceNode.recordsRead, RECORDS_PER_ROUND, `${context}: only this round's records are in the window`);
      if (previousEnd) assert.equal(sourceNode.window.start, previousEnd, `${context}: the position advanced exactly once, to the last run's end`);
      previousEnd = sourceNode.window.end;

      const { rows } = await env().db.raw(`SELECT count(*)::int AS n, count(DISTINCT data->>'id')::int AS ids FROM ${table} WHERE valid_to IS NULL`);
      assert.deepEqual(rows[0], { n: round * RECORDS_PER_ROUND, ids: round * RECORDS_PER_ROUND }, `${context}: every record exactly once`);
    }
  });
});
