import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { env } from '../../support/environment';
import { createPipeline, eventsSource, EventsApi, runHeartbeatTimeouts, launch, linearDocument, pipelineTenant, PipelineTenant, tableDestination, tableRecords, waitForRun } from '../../support/pipelines';
import { until } from '../../support/polling';

/**
 * A remote page that takes its time, seen from a pipeline run: the extract activity heartbeats
 * while it waits (the capability's heartbeat), and canceling the run aborts the request in flight
 * (the capability's abort signal). The heartbeat timeout is shortened to 6 s for the run
 * (WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS), so a page taking 15 s outlasts it. Not shorter: the API,
 * the worker and mocha share this process's event loop and the SDK sends at most one heartbeat per
 * 80% of the timeout, so with 2 s a one-second stall on a loaded machine timed the attempt out;
 * with 6 s only a stall of about 5 s (the timeout less the plugin's 1 s beat) can.
 */

/** GET /events: `records` as one page (page 1, after `delayMs`; later pages are empty, at once); notes requests the client gave up on. */
class SlowEventsApi {
  delayMs = 0;
  records = EventsApi.events(10);
  requests = 0;
  /** Requests whose connection the client closed before the answer was sent. */
  abandoned = 0;
  private server = http.createServer((req, res) => {
    this.requests++;
    const answered = { done: false };
    res.on('close', () => {
      if (!answered.done) this.abandoned++;
    });
    const page = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('page') ?? 1);
    setTimeout(() => {
      if (res.destroyed) return;
      answered.done = true;
      res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ data: page === 1 ? this.records : [] }));
    }, page === 1 ? this.delayMs : 0);
  });

  get baseUrl(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return this;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

describe('Pipeline runs waiting on a slow remote page', function () {
  this.timeout(120_000);
  const api = new SlowEventsApi();
  let t: PipelineTenant;
  let restoreHeartbeatTimeout: () => void;

  before(async () => {
    await api.start();
    // The request's own timeout stays far above the pages' delays: only the run's heartbeat and cancellation matter here.
    t = await pipelineTenant(api.baseUrl, { timeoutMs: 120_000 });
    restoreHeartbeatTimeout = runHeartbeatTimeouts(6000);
  });
  after(async () => {
    restoreHeartbeatTimeout();
    await api.close();
  });

  async function pipeline(table: string): Promise<{ id: string; destination: string }> {
    const source = await eventsSource(t, api as unknown as EventsApi);
    const destination = await tableDestination(t, table, ['id']);
    return { id: (await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }))).id, destination };
  }

  it('keeps heartbeating through pages slower than the heartbeat timeout, and succeeds on the first attempt', async () => {
    // Well over twice the heartbeat timeout: without heartbeats while it waits, attempt 1 times out.
    api.delayMs = 15_000;
    const { id, destination } = await pipeline('slow_pages');
    const run = await launch(t, id);
    const ended = await waitForRun(t, run.id, undefined, 90_000);
    assert.equal(ended.status, 'succeeded', JSON.stringify(ended.error));
    assert.equal((await tableRecords(t, destination)).length, 10);
    // Attempt 1 staged everything: no heartbeat timeout ended an attempt and no retry read the pages again.
    const node = await env().db('pipelineRunNodes').where({ runId: run.id, nodeId: 'src' }).first();
    assert.equal(node.attempt, 1);
  });

  it('aborts the request in flight when the run is canceled: the remote side sees the connection close', async () => {
    api.delayMs = 100_000;
    api.requests = 0;
    api.abandoned = 0;
    const { id } = await pipeline('canceled_pages');
    const run = await launch(t, id);
    await until('the page is asked for', () => api.requests === 1);
    await env().temporal.workflow.getHandle(run.workflow.workflowId).cancel();
    assert.equal((await waitForRun(t, run.id)).status, 'canceled');
    // Long before the page's 100 s: the activity learns of the cancellation at its next heartbeat and aborts.
    await until('the remote side sees the request abandoned', () => api.abandoned === 1);
    assert.equal(api.requests, 1, 'no retry asked again');
  });
});
