import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { DomainError } from '../../../core/errors';
import { invoke } from '../../../services/operations/invoke';
import { launchRunOperation } from '../../../services/pipelines/run-operations';
import { claimRunTurn } from '../../../services/pipelines/run-execution';
import { startQueuedRuns } from '../../../services/pipelines/runs';
import { principalOfKey } from '../../../services/tenancy/api-keys';
import { env } from '../../support/environment';
import { keyIdOf } from '../../support/fixtures';
import { createPipeline, EventsApi, eventsSource, getRun, launch, linearDocument, tableDestination, tableRecords, useEventsApi, waitForRun } from '../../support/pipelines';

/**
 * A launch starts its run's workflow after the run row commits, so the workflow's first activity
 * (the turn claim) finds the row at once; a launch whose start fails (or whose process dies before
 * it) leaves a queued run that the housekeeping sweep starts.
 */
describe('Launching a run: the workflow starts after the run row commits', function () {
  this.timeout(120_000);
  const fixture = useEventsApi(() => EventsApi.events(30));

  async function pipeline(table: string) {
    const { t, api } = fixture;
    const source = await eventsSource(t, api);
    const destination = await tableDestination(t, table, ['id']);
    return { id: (await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }))).id, destination };
  }

  it('the turn claim finds the committed run row on its first attempt', async () => {
    const { t } = fixture;
    const { id } = await pipeline('launch_committed');
    const run = await launch(t, id);
    assert.equal((await waitForRun(t, run.id)).status, 'succeeded');
    const history = await env().temporal.workflow.getHandle(run.workflow.workflowId).fetchHistory();
    const claims = history.events!.map((event) => event.markerRecordedEventAttributes).filter((marker) => marker?.markerName === 'core_local_activity')
      .map((marker) => JSON.parse(Buffer.from(marker!.details!.data!.payloads![0].data!).toString()) as { activity_type: string; attempt: number });
    assert.deepEqual(claims.map((claim) => [claim.activity_type, claim.attempt]), [['claimRunTurn', 1]]);
    // A run that was never recorded is not waited for: the claim refuses it at once, without retries.
    await assert.rejects(claimRunTurn(env().db, randomUUID()), (error) => error instanceof DomainError && error.code === 'run_missing' && error.kind !== 'unavailable');
  });

  /** A launch answered while Temporal is unreachable at the start, as for a process that dies right after the commit: the run stays queued. */
  async function launchUnstarted(pipelineId: string): Promise<{ id: string; workflow: { workflowId: string } }> {
    const { t } = fixture;
    const { db } = env();
    const unreachable = { workflow: { start: () => Promise.reject(new Error('Temporal is unreachable')) } } as unknown as Client;
    const principal = await principalOfKey(env(), db, t.ws.workspaceId, await keyIdOf(t.key));
    const launched = await invoke({ deps: env().dependencies({ temporal: unreachable }), principal, door: 'http', requestId: 'run-launch-test' }, launchRunOperation, { body: { pipelineId } } as never) as { status: number; body: { run: { id: string; workflow: { workflowId: string } } } };
    assert.equal(launched.status, 202, 'the launch is answered: the run is recorded');
    return launched.body.run;
  }

  it('a launch whose workflow start fails leaves the run queued, and the sweep starts it (once)', async () => {
    const { t } = fixture;
    const { id, destination } = await pipeline('launch_recovered');
    const { db, temporal, clock } = env();
    const launched = await launchUnstarted(id);
    const runId = launched.id;
    assert.equal((await getRun(t, runId)).status, 'queued');
    await assert.rejects(temporal.workflow.getHandle(launched.workflow.workflowId).describe(), WorkflowNotFoundError);

    // Runs queued for less than the sweep's age are left alone (their launch may be starting them).
    assert.ok(!(await startQueuedRuns({ db, temporal, clock }, 3_600_000)).started.includes(runId));
    const swept = await startQueuedRuns({ db, temporal, clock }, 0);
    assert.ok(swept.started.includes(runId), 'the sweep started the stranded run');
    assert.equal((await waitForRun(t, runId)).status, 'succeeded');
    assert.equal((await tableRecords(t, destination)).length, 30);
    // A second sweep finds nothing queued to start: a duplicate start is refused by the workflow id anyway.
    assert.ok(!(await startQueuedRuns({ db, temporal, clock }, 0)).started.includes(runId));
  });

  it('a run whose start keeps failing is logged and skipped: a later stranded run still starts', async () => {
    const { t } = fixture;
    const { db, temporal, clock } = env();
    const stuck = await launchUnstarted((await pipeline('launch_stuck')).id);
    const later = await pipeline('launch_later');
    const next = await launchUnstarted(later.id);
    // Temporal refuses the older run's start every time (whatever the reason), and starts the others.
    const refusing = { workflow: { start: (type: string, options: { workflowId: string }) => (options.workflowId === stuck.workflow.workflowId ? Promise.reject(new Error('refused')) : temporal.workflow.start(type, options as never)) } } as unknown as Client;
    const swept = await startQueuedRuns({ db, temporal: refusing, clock }, 0);
    assert.ok(swept.failed.includes(stuck.id), 'the refused run is reported');
    assert.ok(swept.started.includes(next.id), 'the run queued after it was started');
    assert.equal((await waitForRun(t, next.id)).status, 'succeeded');
    assert.equal((await tableRecords(t, later.destination)).length, 30);
    // The refused run is tried again by the next sweep.
    assert.ok((await startQueuedRuns({ db, temporal, clock }, 0)).started.includes(stuck.id));
    assert.equal((await waitForRun(t, stuck.id)).status, 'succeeded');
  });

  it('a run whose workflow an operator terminated is not started again by the sweep', async () => {
    const { t } = fixture;
    const { db, temporal, clock } = env();
    const { id } = await pipeline('launch_terminated');
    // An earlier run of the pipeline holds its turn, so the launched run's workflow waits with its run queued.
    const earlier = await launchUnstarted(id);
    const run = await launch(t, id);
    const stored = async () => db('pipelineRuns').where({ id: run.id }).first() as Promise<{ status: string; workflowStartedAt: Date | null }>;
    assert.ok((await stored()).workflowStartedAt, 'the launch marked its workflow started');
    await temporal.workflow.getHandle(run.workflow.workflowId).terminate('stopped by an operator');
    assert.equal((await stored()).status, 'queued');

    let swept = await startQueuedRuns({ db, temporal, clock }, 0);
    assert.ok(!swept.started.includes(run.id) && !swept.failed.includes(run.id), 'a run marked started is not the sweep\'s');
    // A launch that started the workflow but could not mark it: the start is refused, the run only marked.
    await db('pipelineRuns').where({ id: run.id }).update({ workflowStartedAt: null });
    swept = await startQueuedRuns({ db, temporal, clock }, 0);
    assert.ok(!swept.started.includes(run.id), 'the terminated workflow is not started again');
    assert.ok((await stored()).workflowStartedAt, 'the sweep marked it started');
    assert.equal((await temporal.workflow.getHandle(run.workflow.workflowId).describe()).status.name, 'TERMINATED');
    assert.equal((await waitForRun(t, earlier.id)).status, 'succeeded', 'the earlier run was the sweep\'s to start');
    await db('pipelineRuns').where({ id: run.id }).update({ status: 'canceled', finishedAt: new Date() });
  });
});
