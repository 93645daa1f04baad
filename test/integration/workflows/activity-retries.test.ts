import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { asActivity } from '../../../activities/as-activity';
import { ConflictError } from '../../../core/errors';
import { workspaceSchema } from '../../../plugins/managed-table/storage';
import { workerDependencies } from '../../../services/operations/context';
import { commitRunAsItsLauncher, extractAsItsLauncher } from '../../../services/pipelines/run-commit';
import { claimRunTurn, ExtractHooks } from '../../../services/pipelines/run-execution';
import { env } from '../../support/environment';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, pipelineTenant, PipelineTenant, tableDestination } from '../../support/pipelines';
import { until } from '../../support/polling';

// Temporal runs activities at least once: an attempt can finish its work and its report never
// reach the cluster (a restart, a partition), and Temporal then starts the activity again, maybe
// with the same attempt number. Each run activity is called here as Temporal would call it again,
// with no worker polling, so the calls are the test's alone.

const hooks = (attempt: number, extra: Partial<ExtractHooks> = {}): ExtractHooks => ({ attempt, checkpoint: () => undefined, ...extra });

describe('Run activities called again after their work committed', function () {
  this.timeout(120_000);
  let api: EventsApi;
  let t: PipelineTenant;

  before(async () => {
    api = await new EventsApi().start();
    t = await pipelineTenant(api.baseUrl);
    await env().stopWorker();
  });
  after(async () => {
    api.release();
    await api.close();
    await env().startWorker();
  });

  /** A launched run whose workflow no worker picks up, claimed as the workflow would claim it. */
  async function claimedRun(table: string, records: number) {
    api.records = EventsApi.events(records);
    const source = await eventsSource(t, api, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 50 } });
    const destination = await tableDestination(t, table);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'append' }));
    const run = await launch(t, pipeline.id);
    const claim = await claimRunTurn(env().db, run.id);
    assert.equal(claim.state, 'granted');
    return { runId: run.id as string, workflowId: run.workflow.workflowId as string, rows: async () => (await env().db.raw(`SELECT count(*)::int AS n, count(DISTINCT data->>'id')::int AS ids FROM "${workspaceSchema(t.ws.workspaceId)}".${table} WHERE valid_to IS NULL`)).rows[0] };
  }

  it('answers a finished extraction with its counts, and a finished commit with its outcome, however often and with whichever attempt', async () => {
    const deps = workerDependencies(env());
    const run = await claimedRun('retried_events', 420);
    const first = await extractAsItsLauncher(deps, run.runId, 'src', hooks(1));
    assert.equal(first.recordsRead, 420);
    const pagesRead = api.received.length;
    // The attempt Temporal starts when attempt 1's report was lost, and one started again with the same number.
    assert.deepEqual(await extractAsItsLauncher(deps, run.runId, 'src', hooks(2)), first);
    assert.deepEqual(await extractAsItsLauncher(deps, run.runId, 'src', hooks(1)), first);
    assert.equal(api.received.length, pagesRead, 'nothing was read again');

    const committed = await commitRunAsItsLauncher(deps, run.runId);
    assert.equal(committed.status, 'succeeded');
    assert.deepEqual(await commitRunAsItsLauncher(deps, run.runId), committed, 'the retried commit answers as the commit did');
    assert.deepEqual(await run.rows(), { n: 420, ids: 420 }, 'every record exactly once');
    await env().temporal.workflow.getHandle(run.workflowId).terminate('called by the test');
  });

  it('lets the newest execution of an extraction own its node: an older one stops without failing the run, and nothing is staged twice', async () => {
    const deps = workerDependencies(env());
    const run = await claimedRun('superseded_events', 300);
    // The first execution reads pages 1 and 2 and waits for page 3, as an attempt cut off from its cluster would.
    const seen = api.received.length;
    const release = api.holdFrom(3);
    const older = extractAsItsLauncher(deps, run.runId, 'src', hooks(1));
    older.catch(() => undefined);
    await until('the first execution reached page 3', () => api.received.slice(seen).some((request) => String(request.query.page) === '3'), 30_000, 20);
    // The cluster starts the same attempt again; it resumes from nothing (no heartbeat reached it).
    release();
    const newer = await extractAsItsLauncher(deps, run.runId, 'src', hooks(1));
    assert.equal(newer.recordsRead, 300);
    const stopped = await older.then(() => undefined, (error: unknown) => error);
    assert.ok(stopped instanceof ConflictError, `the older execution stopped: ${String(stopped)}`);
    assert.equal(stopped.code, 'attempt_superseded');
    const reported = await asActivity(() => Promise.reject(stopped)).catch((error: unknown) => error);
    assert.ok(reported instanceof ApplicationFailure);
    assert.equal(reported.nonRetryable, false, 'a superseded attempt never ends the workflow');
    assert.equal((await commitRunAsItsLauncher(deps, run.runId)).status, 'succeeded');
    assert.deepEqual(await run.rows(), { n: 300, ids: 300 }, 'every record exactly once');
    await env().temporal.workflow.getHandle(run.workflowId).terminate('called by the test');
  });
});
