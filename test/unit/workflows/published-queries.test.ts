import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import { ActivityFailure, ApplicationFailure, CancelledFailure, WorkflowFailedError } from '@temporalio/client';
import { InputError, UnavailableError } from '../../../core/errors';
import { asActivity } from '../../../activities/as-activity';
import { publishReleaseWorkflow, queryJobWorkflow } from '../../../workflows';
import { queryJobWorkflowId, releaseWorkflowId } from '../../../workflows/names';
import { until } from '../../support/polling';
import { Activities, assertSkipped, mockActivities, startWorkflowTestEnvironment, WorkflowTestEnvironment } from '../../support/workflow-test-environment';

// The asynchronous query job and the release workflows, on Temporal's time-skipping test server
// with mocked activities.

/** The failure a service call's DomainError becomes in the real activities. */
const failingWith = (error: Error) => () => asActivity(() => Promise.reject(error));

describe('Query job and release workflows (time-skipping test server, mocked activities)', function () {
  this.timeout(180_000);
  let testing: WorkflowTestEnvironment;
  before(async () => {
    testing = await startWorkflowTestEnvironment(['runQueryJob', 'failQueryJob', 'checkReleaseVersion', 'activateRelease']);
  });
  after(async () => {
    await testing?.teardown();
  });

  const jobOf = (jobId: string, taskQueue: string) => testing.env.client.workflow.execute(queryJobWorkflow, { taskQueue, workflowId: queryJobWorkflowId(jobId), args: [{ jobId }] });

  describe('queryJobWorkflow', () => {
    it('runs the job once and answers its status', async () => {
      const { activities, calls } = mockActivities({ runQueryJob: async () => ({ status: 'succeeded' }), failQueryJob: async () => ({ status: 'failed' }) });
      assert.equal(await testing.withActivities(activities, (taskQueue) => jobOf('job-1', taskQueue)), 'succeeded');
      assert.deepEqual(calls, [{ name: 'runQueryJob', input: { jobId: 'job-1' } }]);
    });

    it('retries a job whose database was away, with backoff in skipped time', async () => {
      const { activities, calls } = mockActivities({
        runQueryJob: async () => (Context.current().info.attempt < 3 ? failingWith(new UnavailableError('database_unavailable', 'The database is not answering.'))() : { status: 'succeeded' }),
        failQueryJob: async () => ({ status: 'failed' }),
      });
      const clocked = await testing.clocked(activities, (taskQueue) => jobOf('job-retried', taskQueue));
      assert.equal(clocked.result, 'succeeded');
      assert.deepEqual(calls.map((call) => call.name), ['runQueryJob', 'runQueryJob', 'runQueryJob']);
      assertSkipped(clocked, 1_000 + 2_000, 'the backoff between the three attempts');
    });

    it('out of retries, fails the job with the last attempt\'s reason and answers that status', async () => {
      const { activities, calls } = mockActivities({
        runQueryJob: failingWith(new UnavailableError('database_unavailable', 'The database is not answering.')),
        failQueryJob: async () => ({ status: 'failed' }),
      });
      assert.equal(await testing.withActivities(activities, (taskQueue) => jobOf('job-failing', taskQueue)), 'failed');
      assert.deepEqual(calls, [
        { name: 'runQueryJob', input: { jobId: 'job-failing' } },
        { name: 'runQueryJob', input: { jobId: 'job-failing' } },
        { name: 'runQueryJob', input: { jobId: 'job-failing' } },
        { name: 'failQueryJob', input: { jobId: 'job-failing', cause: 'The database is not answering.' } },
      ]);
    });

    it('a job the rules refuse is not retried: it fails at once', async () => {
      const { activities, calls } = mockActivities({
        runQueryJob: failingWith(new InputError('query_invalid', 'The query names an unknown prefix.')),
        failQueryJob: async () => ({ status: 'failed' }),
      });
      assert.equal(await testing.withActivities(activities, (taskQueue) => jobOf('job-invalid', taskQueue)), 'failed');
      assert.deepEqual(calls.map((call) => call.name), ['runQueryJob', 'failQueryJob']);
      assert.deepEqual(calls[1].input, { jobId: 'job-invalid', cause: 'The query names an unknown prefix.' });
    });

    it('canceled, closes canceled without failing the job (the cancel owns its status)', async () => {
      const { activities, calls } = mockActivities({
        runQueryJob: async () => {
          const context = Context.current();
          for (;;) {
            context.heartbeat();
            await context.sleep(100);
          }
        },
        failQueryJob: async () => ({ status: 'failed' }),
      });
      const failure = await testing.withActivities(activities, async (taskQueue) => {
        const job = await testing.env.client.workflow.start(queryJobWorkflow, { taskQueue, workflowId: queryJobWorkflowId('job-canceled'), args: [{ jobId: 'job-canceled' }] });
        await until('the job to start', () => calls.length > 0);
        await job.cancel();
        return job.result().catch((error: unknown) => error);
      });
      assert.ok(failure instanceof WorkflowFailedError && failure.cause instanceof CancelledFailure, String(failure));
      assert.deepEqual(calls.map((call) => call.name), ['runQueryJob']);
    });
  });

  describe('publishReleaseWorkflow', () => {
    const input = { queryId: 'q-1', queryVersionId: 'qv-2', memberId: 'mem-1', acknowledge: true };
    const workflowId = releaseWorkflowId(input.queryId, input.queryVersionId, 'req-1');
    // The presented release, as far as this workflow cares: it hands it back unread.
    const release = { id: 'rel-1', queryId: 'q-1', queryVersionId: 'qv-2', status: 'active' } as unknown as Awaited<ReturnType<Activities['activateRelease']>>;

    it('checks the version, then activates it with the workflow\'s id, and answers the release', async () => {
      const { activities, calls } = mockActivities({ checkReleaseVersion: async () => ({ ok: true as const }), activateRelease: async () => release });
      const answered = await testing.withActivities(activities, (taskQueue) => testing.env.client.workflow.execute(publishReleaseWorkflow, { taskQueue, workflowId, args: [input] }));
      assert.deepEqual(answered, release);
      assert.deepEqual(calls, [
        { name: 'checkReleaseVersion', input: { queryId: 'q-1', queryVersionId: 'qv-2' } },
        { name: 'activateRelease', input: { ...input, workflowId } },
      ]);
    });

    it('a version the check refuses is never activated: the workflow fails with the check\'s code', async () => {
      const { activities, calls } = mockActivities({
        checkReleaseVersion: failingWith(new InputError('release_incompatible', 'The version reads a class the active ontology no longer has.')),
        activateRelease: async () => release,
      });
      const failure = await testing.withActivities(activities, (taskQueue) => testing.env.client.workflow.execute(publishReleaseWorkflow, { taskQueue, workflowId: `${workflowId}-refused`, args: [input] }))
        .then(() => assert.fail('the release was published'), (error: unknown) => error);
      assert.ok(failure instanceof WorkflowFailedError && failure.cause instanceof ActivityFailure && failure.cause.cause instanceof ApplicationFailure, String(failure));
      assert.equal(failure.cause.cause.type, 'release_incompatible');
      assert.deepEqual(calls.map((call) => call.name), ['checkReleaseVersion']);
    });
  });
});
