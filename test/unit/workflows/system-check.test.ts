import assert from 'node:assert/strict';
import { systemCheckWorkflow } from '../../../workflows';
import { mockActivities, startWorkflowTestEnvironment, WorkflowTestEnvironment } from '../../support/workflow-test-environment';

// The system check (GET /readyz?worker=true), on Temporal's time-skipping test server with the
// database probe mocked.

describe('System check workflow (time-skipping test server, mocked activities)', function () {
  this.timeout(180_000);
  let testing: WorkflowTestEnvironment;
  before(async () => {
    testing = await startWorkflowTestEnvironment(['probeDatabase']);
  });
  after(async () => {
    await testing?.teardown();
  });

  it('answers the probe\'s result, holding the probe at most 10 s and never less than 0', async () => {
    const probed = { databaseTime: '2026-01-01T00:00:00.000Z', workerIdentity: '1@test' };
    const { activities, calls } = mockActivities({ probeDatabase: async () => probed });
    // This workflow has no timer to skip to. Awaiting a result unlocks time skipping, and with
    // nothing scheduled the server skipped straight to the execution's end before a loaded worker
    // had taken its first task (CI, "Workflow execution timed out"); held locked (locks are
    // counted), the server's clock runs as the real one.
    const testService = testing.env.connection.testService!;
    await testService.lockTimeSkipping({});
    let results: unknown[];
    try {
      results = await testing.withActivities(activities, (taskQueue) => Promise.all([undefined, { holdMs: 2_500 }, { holdMs: 60_000 }, { holdMs: -5 }].map((input, index) => (
        testing.env.client.workflow.execute(systemCheckWorkflow, { taskQueue, workflowId: `system-check-${index}`, args: input ? [input] : [] })
      ))));
    } finally {
      await testService.unlockTimeSkipping({});
    }
    assert.deepEqual(results, Array(4).fill(probed));
    assert.deepEqual(calls.map((call) => (call.input as { holdMs: number }).holdMs).sort((a, b) => a - b), [0, 0, 2_500, 10_000]);
  });
});
