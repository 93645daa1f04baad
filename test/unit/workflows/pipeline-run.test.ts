import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { InputError, UpstreamError } from '../../../core/errors';
import { asActivity } from '../../../activities/as-activity';
import { pipelineRunWorkflow, scheduledLaunchWorkflow } from '../../../workflows';
import { runWorkflowId } from '../../../workflows/names';
import { until } from '../../support/polling';
import { assertSkipped, mockActivities, startWorkflowTestEnvironment, WorkflowTestEnvironment } from '../../support/workflow-test-environment';

// The pipeline run workflow and the scheduled launch, on Temporal's time-skipping test server
// with mocked activities: the order of the steps, their arguments, the outcome, and the timers
// and retry backoff skipped rather than waited for.

const granted = (...sourceNodeIds: string[]) => async () => ({ state: 'granted' as const, sourceNodeIds });
const extracted = async () => ({ recordsRead: 10, pages: 1, stopReason: null });
const committed = async () => ({ status: 'succeeded', nextWorkflowId: null });
const ended = async ({ status }: { status: string }) => ({ status, nextWorkflowId: null });

/** The failure a service call's DomainError becomes in the real activities. */
const failingWith = (error: Error) => () => asActivity(() => Promise.reject(error));

describe('Pipeline run workflow (time-skipping test server, mocked activities)', function () {
  // The first run in a clone bundles the workflows.
  this.timeout(180_000);
  let testing: WorkflowTestEnvironment;
  before(async () => {
    testing = await startWorkflowTestEnvironment(['claimRunTurn', 'extractSource', 'commitRun', 'endRun', 'createScheduledRun']);
  });
  after(async () => {
    await testing?.teardown();
  });

  const runOf = (runId: string, taskQueue: string) => testing.env.client.workflow.execute(pipelineRunWorkflow, { taskQueue, workflowId: runWorkflowId(runId), args: [{ runId }] });

  it('claims its turn, extracts every source, commits once, and answers the commit\'s status', async () => {
    const { activities, calls } = mockActivities({ claimRunTurn: granted('orders', 'customers'), extractSource: extracted, commitRun: committed, endRun: ended });
    const status = await testing.withActivities(activities, (taskQueue) => runOf('run-1', taskQueue));
    assert.equal(status, 'succeeded');
    assert.deepEqual(calls[0], { name: 'claimRunTurn', input: { runId: 'run-1' } });
    // The sources are extracted side by side, in either order.
    assert.deepEqual(new Set(calls.slice(1, 3).map((call) => JSON.stringify(call))), new Set([
      JSON.stringify({ name: 'extractSource', input: { runId: 'run-1', nodeId: 'orders' } }),
      JSON.stringify({ name: 'extractSource', input: { runId: 'run-1', nodeId: 'customers' } }),
    ]));
    assert.deepEqual(calls.slice(3), [{ name: 'commitRun', input: { runId: 'run-1' } }]);
  });

  it('a queued run claims again when its 30 s wait runs out, in skipped time', async () => {
    let claims = 0;
    const { activities, calls } = mockActivities({
      claimRunTurn: async () => (++claims === 1 ? { state: 'waiting' as const, behindRunId: 'run-ahead' } : { state: 'granted' as const, sourceNodeIds: ['orders'] }),
      extractSource: extracted,
      commitRun: committed,
      endRun: ended,
    });
    const clocked = await testing.clocked(activities, (taskQueue) => runOf('run-queued', taskQueue));
    assert.equal(clocked.result, 'succeeded');
    assert.deepEqual(calls.map((call) => call.name), ['claimRunTurn', 'claimRunTurn', 'extractSource', 'commitRun']);
    assertSkipped(clocked, 30_000, 'the wait for a turn signal that never came');
  });

  it('signals the next queued run when it ends, which then claims its turn', async () => {
    let aheadCommitted = false;
    const { activities, calls } = mockActivities({
      claimRunTurn: async ({ runId }) => (runId === 'run-next' && !aheadCommitted
        ? { state: 'waiting' as const, behindRunId: 'run-ahead' }
        : { state: 'granted' as const, sourceNodeIds: ['orders'] }),
      extractSource: extracted,
      commitRun: async ({ runId }) => {
        if (runId !== 'run-ahead') return { status: 'succeeded', nextWorkflowId: null };
        aheadCommitted = true;
        return { status: 'succeeded', nextWorkflowId: runWorkflowId('run-next') };
      },
      endRun: ended,
    });
    await testing.withActivities(activities, async (taskQueue) => {
      const next = await testing.env.client.workflow.start(pipelineRunWorkflow, { taskQueue, workflowId: runWorkflowId('run-next'), args: [{ runId: 'run-next' }] });
      await until('the next run to find itself queued', () => calls.some((call) => call.name === 'claimRunTurn'));
      assert.equal(await runOf('run-ahead', taskQueue), 'succeeded');
      assert.equal(await next.result(), 'succeeded');
      const { events } = await next.fetchHistory();
      assert.ok(events!.some((event) => event.workflowExecutionSignaledEventAttributes?.signalName === 'runTurn'), 'the run ahead signaled its turn');
    });
    assert.deepEqual(calls.filter((call) => (call.input as { runId: string }).runId === 'run-next').map((call) => call.name), ['claimRunTurn', 'claimRunTurn', 'extractSource', 'commitRun']);
  });

  it('retries a failing extraction with backoff in skipped time, then commits', async () => {
    const { activities, calls } = mockActivities({
      claimRunTurn: granted('orders'),
      extractSource: async (input) => (Context.current().info.attempt < 4 ? failingWith(new UpstreamError('upstream_failed', 'The source answered 503.', { status: 503, nodeId: input.nodeId }))() : extracted()),
      commitRun: committed,
      endRun: ended,
    });
    const clocked = await testing.clocked(activities, (taskQueue) => runOf('run-retried', taskQueue));
    assert.equal(clocked.result, 'succeeded');
    assert.deepEqual(calls.map((call) => call.name), ['claimRunTurn', 'extractSource', 'extractSource', 'extractSource', 'extractSource', 'commitRun']);
    assertSkipped(clocked, 1_000 + 2_000 + 4_000, 'the backoff between the four attempts');
  });

  it('out of retries, ends the run failed with the activity\'s evidence, and fails with its code', async () => {
    const { activities, calls } = mockActivities({
      claimRunTurn: granted('orders'),
      extractSource: failingWith(new UpstreamError('upstream_failed', 'The source answered 503.', { status: 503, nodeId: 'orders' })),
      commitRun: committed,
      endRun: ended,
    });
    const failure = await testing.withActivities(activities, (taskQueue) => runOf('run-failing', taskQueue)).then(() => assert.fail('the run succeeded'), (error: unknown) => error);
    assert.ok(failure instanceof WorkflowFailedError && failure.cause instanceof ApplicationFailure, String(failure));
    assert.equal(failure.cause.type, 'upstream_failed');
    assert.deepEqual(calls.map((call) => call.name), ['claimRunTurn', 'extractSource', 'extractSource', 'extractSource', 'extractSource', 'endRun'], 'four attempts, then the run ends');
    assert.deepEqual(calls.at(-1)!.input, {
      runId: 'run-failing',
      status: 'failed',
      error: { nodeId: 'orders', code: 'upstream_failed', message: 'The source answered 503.', remoteStatus: 503, details: { status: 503, nodeId: 'orders' } },
    });
  });

  it('a rule violation is not retried: the run ends failed after one attempt', async () => {
    const { activities, calls } = mockActivities({
      claimRunTurn: granted('orders'),
      extractSource: failingWith(new InputError('cast_failed', 'The field "total" is not a number.', [], { nodeId: 'orders' })),
      commitRun: committed,
      endRun: ended,
    });
    const failure = await testing.withActivities(activities, (taskQueue) => runOf('run-invalid', taskQueue)).catch((error: unknown) => error);
    assert.ok(failure instanceof WorkflowFailedError && failure.cause instanceof ApplicationFailure && failure.cause.type === 'cast_failed', String(failure));
    assert.deepEqual(calls.map((call) => call.name), ['claimRunTurn', 'extractSource', 'endRun']);
    assert.deepEqual((calls[2].input as { error: { code: string; nodeId: string } }).error.code, 'cast_failed');
  });

  it('canceled while extracting, ends the run canceled (no commit) and closes canceled', async () => {
    const { activities, calls } = mockActivities({
      claimRunTurn: granted('orders'),
      // Heartbeats until the cancellation reaches it, as the real extraction does.
      extractSource: async () => {
        const context = Context.current();
        for (;;) {
          context.heartbeat();
          await context.sleep(100);
        }
      },
      commitRun: committed,
      endRun: ended,
    });
    const failure = await testing.withActivities(activities, async (taskQueue) => {
      const run = await testing.env.client.workflow.start(pipelineRunWorkflow, { taskQueue, workflowId: runWorkflowId('run-canceled'), args: [{ runId: 'run-canceled' }] });
      await until('the extraction to start', () => calls.some((call) => call.name === 'extractSource'));
      await run.cancel();
      return run.result().catch((error: unknown) => error);
    });
    assert.ok(failure instanceof WorkflowFailedError && failure.cause instanceof CancelledFailure, String(failure));
    assert.deepEqual(calls.map((call) => call.name), ['claimRunTurn', 'extractSource', 'endRun']);
    assert.deepEqual(calls[2].input, { runId: 'run-canceled', status: 'canceled', error: null });
  });

  it('a run that already ended answers its status without extracting', async () => {
    const { activities, calls } = mockActivities({ claimRunTurn: async () => ({ state: 'ended' as const, status: 'canceled' }), extractSource: extracted, commitRun: committed, endRun: ended });
    assert.equal(await testing.withActivities(activities, (taskQueue) => runOf('run-ended', taskQueue)), 'canceled');
    assert.deepEqual(calls.map((call) => call.name), ['claimRunTurn']);
  });

  it('a scheduled launch records its run and starts the run workflow as an abandoned child', async () => {
    const { activities, calls } = mockActivities({
      createScheduledRun: async () => ({ runId: 'run-scheduled', workspaceId: 'ws-1', projectId: 'prj-1', pipelineId: 'pl-1', input: { runId: 'run-scheduled' } }),
      claimRunTurn: granted('orders'),
      extractSource: extracted,
      commitRun: committed,
      endRun: ended,
    });
    const status = await testing.withActivities(activities, async (taskQueue) => {
      const runId = await testing.env.client.workflow.execute(scheduledLaunchWorkflow, { taskQueue, workflowId: 'weft-schedule-sch-1-launch', args: [{ scheduleId: 'sch-1' }] });
      assert.equal(runId, 'run-scheduled');
      return testing.env.client.workflow.getHandle(runWorkflowId('run-scheduled')).result();
    });
    assert.equal(status, 'succeeded');
    assert.deepEqual(calls[0], { name: 'createScheduledRun', input: { scheduleId: 'sch-1' } });
    assert.deepEqual(calls.slice(1).map((call) => call.name), ['claimRunTurn', 'extractSource', 'commitRun']);
  });

  it('a scheduled launch whose schedule is gone starts nothing', async () => {
    const { activities, calls } = mockActivities({ createScheduledRun: async () => null });
    const runId = await testing.withActivities(activities, (taskQueue) => testing.env.client.workflow.execute(scheduledLaunchWorkflow, { taskQueue, workflowId: 'weft-schedule-sch-gone-launch', args: [{ scheduleId: 'sch-gone' }] }));
    assert.equal(runId, null);
    assert.deepEqual(calls, [{ name: 'createScheduledRun', input: { scheduleId: 'sch-gone' } }]);
  });
});
