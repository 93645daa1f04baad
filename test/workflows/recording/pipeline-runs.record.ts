import assert from 'node:assert/strict';
import { env } from '../../support/environment';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, pipelineTenant, PipelineTenant, tableDestination, waitForRun } from '../../support/pipelines';
import { recording, save } from './save-history';

// Pipeline runs: imports only what older code has too, so histories from before a patch are recorded with this file.
describe('Recording pipeline run histories', function () {
  this.timeout(180_000);
  let api: EventsApi;
  let t: PipelineTenant;
  before(async () => {
    api = await new EventsApi().start();
    api.records = EventsApi.events(60);
    t = await pipelineTenant(api.baseUrl);
  });
  after(() => api.close());
  beforeEach(() => Object.assign(api, { failNext: 0, delayMs: 0 }));

  async function pipeline(table: string): Promise<string> {
    const source = await eventsSource(t, api);
    const destination = await tableDestination(t, table, ['id']);
    return (await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }))).id;
  }

  recording('pipeline-run-succeeded', async () => {
    const run = await launch(t, await pipeline('recorded_succeeded'));
    assert.equal((await waitForRun(t, run.id)).status, 'succeeded');
    await save('pipeline-run-succeeded', run.workflow.workflowId);
  });

  recording('pipeline-run-queued-then-succeeded', async () => {
    // The second run waits for the first one's turn signal (the condition and the signal in its history).
    const pipelineId = await pipeline('recorded_queued');
    api.delayMs = 300;
    const first = await launch(t, pipelineId);
    const second = await launch(t, pipelineId);
    assert.equal((await waitForRun(t, second.id)).status, 'succeeded');
    assert.equal((await waitForRun(t, first.id)).status, 'succeeded');
    await save('pipeline-run-queued-then-succeeded', second.workflow.workflowId);
  });

  recording('pipeline-run-failed', async () => {
    // Every attempt of the extraction fails (4 attempts): the run ends failed with the remote status.
    api.failNext = 1_000;
    const run = await launch(t, await pipeline('recorded_failed'));
    const ended = await waitForRun(t, run.id, undefined, 90_000);
    assert.equal(ended.status, 'failed');
    await save('pipeline-run-failed', run.workflow.workflowId);
  });

  recording('pipeline-run-canceled', async () => {
    api.delayMs = 60_000;
    const run = await launch(t, await pipeline('recorded_canceled'));
    await waitForRun(t, run.id, (r) => r.status === 'running');
    await env().temporal.workflow.getHandle(run.workflow.workflowId).cancel();
    assert.equal((await waitForRun(t, run.id)).status, 'canceled');
    await save('pipeline-run-canceled', run.workflow.workflowId);
  });
});
