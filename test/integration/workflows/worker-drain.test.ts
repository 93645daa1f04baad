import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { temporalSettings } from '../../../core/temporal-config';
import { loadEncryptionKey } from '../../../core/config';
import { startWorker } from '../../../worker';
import { env } from '../../support/environment';
import { BUILT_START, startScript } from '../../support/processes';

describe('The worker process', function () {
  this.timeout(180_000);

  it('finishes an in-flight activity on SIGTERM before it exits', async () => {
    // A queue of its own, so only the worker process under test can take the activity.
    const taskQueue = `drain-${randomUUID()}`;
    const worker = await startScript(BUILT_START, ['worker'], { WEFT_TASK_QUEUE: taskQueue }, /worker: polling/, 120_000);
    const handle = await env().temporal.workflow.start('systemCheckWorkflow', { taskQueue, workflowId: `drain-${randomUUID()}`, args: [{ holdMs: 4000 }] });

    // Wait until the activity is running on that worker, then ask it to stop.
    let startedAtMs: number | undefined;
    for (let i = 0; i < 100 && startedAtMs === undefined; i++) {
      const { raw } = await handle.describe();
      // PendingActivityState.STARTED
      const started = raw.pendingActivities?.find((a) => Number(a.state) === 2)?.lastStartedTime;
      if (started) startedAtMs = Number(started.seconds) * 1000 + Math.floor((started.nanos ?? 0) / 1e6);
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(startedAtMs !== undefined, 'the activity started on the worker process');
    const exitCode = await worker.stop('SIGTERM');
    assert.equal(exitCode, 0, worker.output());
    // Measured from the activity's start (the server's clock is this machine's), not from the
    // signal: however late the signal, the worker exits only after the activity's 4 s hold.
    assert.ok(Date.now() >= startedAtMs + 4000, 'the worker waited for the in-flight activity instead of exiting at once');

    const history = await handle.fetchHistory();
    const completed = history.events?.filter((e) => e.activityTaskCompletedEventAttributes) ?? [];
    const failed = history.events?.filter((e) => e.activityTaskFailedEventAttributes || e.activityTaskTimedOutEventAttributes) ?? [];
    assert.equal(completed.length, 1, 'the draining worker completed the activity');
    assert.equal(failed.length, 0);

    // The workflow itself finishes once any worker picks up its next task.
    const finisher = await startWorker({ db: env().db, encryptionKey: loadEncryptionKey(), temporalAddress: process.env.TEMPORAL_ADDRESS!, namespace: temporalSettings().namespace, taskQueue });
    try {
      const result = (await handle.result()) as { workerIdentity: string };
      assert.match(result.workerIdentity, /^\d+@/);
      assert.notEqual(result.workerIdentity.split('@')[0], String(process.pid), 'the activity ran in the worker process, not here');
    } finally {
      await finisher.shutdown();
    }
  });
});
