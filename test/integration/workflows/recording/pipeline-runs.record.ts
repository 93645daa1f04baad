import assert from 'node:assert/strict';
import { env } from '../../../support/environment';
import { launch, waitForRun } from '../../../support/pipelines';
import { recording, save, usePipelines } from './save-history';

// Pipeline runs: imports only what older code has too, so histories from before a patch are recorded with this file.
describe('Recording pipeline run histories', function () {
  this.timeout(180_000);
  const fixture = usePipelines();
  const { pipeline } = fixture;

  recording('pipeline-run-succeeded', async () => {
    const run = await launch(fixture.t, await pipeline('recorded_succeeded'));
    assert.equal((await waitForRun(fixture.t, run.id)).status, 'succeeded');
    await save('pipeline-run-succeeded', run.workflow.workflowId);
  });

  recording('pipeline-run-queued-then-succeeded', async () => {
    // The second run waits for the first one's turn signal (the condition and the signal in its history).
    const pipelineId = await pipeline('recorded_queued');
    fixture.api.delayMs = 300;
    const first = await launch(fixture.t, pipelineId);
    const second = await launch(fixture.t, pipelineId);
    assert.equal((await waitForRun(fixture.t, second.id)).status, 'succeeded');
    assert.equal((await waitForRun(fixture.t, first.id)).status, 'succeeded');
    await save('pipeline-run-queued-then-succeeded', second.workflow.workflowId);
  });

  recording('pipeline-run-failed', async () => {
    // Every attempt of the extraction fails (4 attempts): the run ends failed with the remote status.
    fixture.api.failNext = 1_000;
    const run = await launch(fixture.t, await pipeline('recorded_failed'));
    const ended = await waitForRun(fixture.t, run.id, undefined, 90_000);
    assert.equal(ended.status, 'failed');
    await save('pipeline-run-failed', run.workflow.workflowId);
  });

  recording('pipeline-run-canceled', async () => {
    fixture.api.delayMs = 60_000;
    const run = await launch(fixture.t, await pipeline('recorded_canceled'));
    await waitForRun(fixture.t, run.id, (r) => r.status === 'running');
    await env().temporal.workflow.getHandle(run.workflow.workflowId).cancel();
    assert.equal((await waitForRun(fixture.t, run.id)).status, 'canceled');
    await save('pipeline-run-canceled', run.workflow.workflowId);
  });
});
