import assert from 'node:assert/strict';
import { env } from '../../support/environment';
import {
  createPipeline,
  EventsApi,
  eventsSource,
  launch,
  linearDocument,
  PipelineTenant,
  tableDestination,
  tableRecords,
  useEventsApi,
  waitForRun,
} from '../../support/pipelines';

const HOUR = 3600_000;
const window = (overrides: Record<string, unknown> = {}) => ({ startParameter: 'since', endParameter: 'until', lookback: 'PT6H', ...overrides });

describe('Incremental windows of pipeline runs (SPEC 2.2)', function () {
  this.timeout(120_000);
  const fixture = useEventsApi(() => EventsApi.events(60));
  let api: EventsApi;
  let t: PipelineTenant;
  beforeEach(() => ({ api, t } = fixture));

  async function runToEnd(pipelineId: string) {
    return waitForRun(t, (await launch(t, pipelineId)).id);
  }
  const sourceWindow = (run: any) => run.nodes.find((n: any) => n.nodeId === 'src').window;

  it('since_last starts at the lookback, then where the last successful run ended; a failed run is read again', async () => {
    const source = await eventsSource(t, api, { window: window() });
    const destination = await tableDestination(t, 'since_last_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { mode: 'incremental', writeMode: 'upsert' }));

    const first = await runToEnd(pipeline.id);
    assert.equal(first.status, 'succeeded', JSON.stringify(first.error));
    assert.equal(sourceWindow(first).end, first.syncTime, 'the window ends at the run\'s sync time');
    assert.equal(Date.parse(first.syncTime) - Date.parse(sourceWindow(first).start), 6 * HOUR, 'the first window is the lookback');
    assert.equal((await tableRecords(t, destination)).length, 60);
    const sent = api.windowParams()[0];
    assert.deepEqual(sent, { start: sourceWindow(first).start, end: sourceWindow(first).end }, 'the API received exactly the window');

    api.failNext = 100;
    const second = await runToEnd(pipeline.id);
    assert.equal(second.status, 'failed');
    assert.equal(sourceWindow(second)?.start ?? null, null, 'the failed run never got a page');
    api.failNext = 0;

    // Five events after the first window ended: the failed run's window, read again by the third.
    const firstEnd = Date.parse(sourceWindow(first).end);
    api.records = [...api.records, ...[61, 62, 63, 64, 65].map((id, i) => ({ id, updated_at: new Date(firstEnd + i * 10).toISOString(), amount: id, status: 'open' }))];
    api.received = [];
    const third = await runToEnd(pipeline.id);
    assert.equal(third.status, 'succeeded', JSON.stringify(third.error));
    assert.equal(sourceWindow(third).start, sourceWindow(first).end, 'the third run resumes where the last successful run ended, re-reading the failed run\'s window');
    assert.equal(sourceWindow(third).end, third.syncTime);
    assert.equal(third.nodes.find((n: any) => n.nodeId === 'src').recordsRead, 5, 'only the new records are in the window');
    assert.equal((await tableRecords(t, destination)).length, 65);
  });

  it('rolling reads the last lookback every run, whatever came before', async () => {
    const source = await eventsSource(t, api, { window: window({ mode: 'rolling', lookback: 'PT30M30S' }) });
    const destination = await tableDestination(t, 'rolling_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { mode: 'incremental', writeMode: 'upsert' }));
    for (let i = 0; i < 2; i++) {
      const run = await runToEnd(pipeline.id);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
      assert.equal(Date.parse(run.syncTime) - Date.parse(sourceWindow(run).start), 30.5 * 60_000);
      assert.equal(run.nodes.find((n: any) => n.nodeId === 'src').recordsRead, 30, 'the 30 records of the last 30 minutes, every time');
    }
    assert.equal((await tableRecords(t, destination)).length, 30);
  });

  it('an overlap re-reads before the last window end, and upsert keeps one record per key with the late change', async () => {
    const source = await eventsSource(t, api, { window: window({ overlap: 'PT20M' }) });
    const destination = await tableDestination(t, 'overlap_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { mode: 'incremental', writeMode: 'upsert' }));
    const first = await runToEnd(pipeline.id);
    assert.equal(first.status, 'succeeded', JSON.stringify(first.error));
    // A late change to an event inside the overlap, and its timestamp moved to just before the first window end.
    const late = api.records[55];
    late.amount = 9999;
    late.updated_at = new Date(Date.parse(sourceWindow(first).end) - 5 * 60_000).toISOString();
    const second = await runToEnd(pipeline.id);
    assert.equal(second.status, 'succeeded', JSON.stringify(second.error));
    assert.equal(Date.parse(sourceWindow(first).end) - Date.parse(sourceWindow(second).start), 20 * 60_000, 'the second window starts one overlap before the first ended');
    assert.ok(second.nodes.find((n: any) => n.nodeId === 'src').recordsRead > 0, 'the overlap re-read records');
    const rows = await tableRecords(t, destination);
    assert.equal(rows.length, 60, 'no duplicates');
    assert.equal(new Set(rows.map((r) => r.id)).size, 60);
    assert.equal(rows.find((r) => r.id === late.id)!.amount, 9999);
  });

  for (const [format, pattern] of [
    ['iso', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/],
    ['date', /^\d{4}-\d{2}-\d{2}$/],
    ['epoch_ms', /^\d{13}$/],
    ['epoch_s', /^\d{10}$/],
  ] as const) {
    it(`sends the window in the ${format} format`, async () => {
      const source = await eventsSource(t, api, { window: window({ format, mode: 'rolling' }) });
      const destination = await tableDestination(t, `format_${format}`, ['id']);
      const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }));
      const run = await runToEnd(pipeline.id);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
      const [sent] = api.windowParams();
      assert.match(String(sent.start), pattern);
      assert.match(String(sent.end), pattern);
      if (format === 'epoch_ms') assert.equal(Number(sent.end), Date.parse(run.syncTime));
      if (format === 'epoch_s') assert.equal(Number(sent.end), Math.floor(Date.parse(run.syncTime) / 1000));
      if (format === 'date') assert.equal(sent.end, run.syncTime.slice(0, 10));
    });
  }

  it('sends window and pagination parameters in a POST body when their location is body', async () => {
    const source = await eventsSource(t, api, {
      request: { url: `${api.baseUrl}events`, method: 'POST' },
      window: window({ location: 'body' }),
      pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 25, location: 'body' },
    });
    const destination = await tableDestination(t, 'body_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { mode: 'incremental', writeMode: 'upsert' }));
    const run = await runToEnd(pipeline.id);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    const requests = api.received.filter((r) => r.path === '/events');
    assert.ok(requests.length >= 3);
    for (const request of requests) {
      assert.equal(request.method, 'POST');
      assert.deepEqual(Object.keys(request.query), [], 'nothing in the query string');
      assert.equal(request.body?.since, sourceWindow(run).start);
      assert.equal(request.body?.per_page, 25);
    }
    assert.deepEqual(requests.map((r) => r.body?.page), requests.map((_, i) => i + 1));
    assert.equal((await tableRecords(t, destination)).length, 60);
  });

  it('a read stopped by maxPages warns of truncation and does not advance the position', async () => {
    const source = await eventsSource(t, api, { window: window(), pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 10, maxPages: 2 } });
    const destination = await tableDestination(t, 'truncated_events', ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { mode: 'incremental', writeMode: 'upsert' }));
    const first = await runToEnd(pipeline.id);
    assert.equal(first.status, 'succeeded', JSON.stringify(first.error));
    const src = first.nodes.find((n: any) => n.nodeId === 'src');
    assert.equal(src.stopReason, 'max_pages');
    assert.equal(src.recordsRead, 20);
    assert.deepEqual(first.warnings.map((w: any) => [w.nodeId, w.code]), [['src', 'truncated']]);
    assert.match(first.warnings[0].message, /did not advance/);
    assert.equal(await env().db('pipelinePositions').where({ pipelineId: pipeline.id }).first(), undefined, 'no position was committed');

    const second = await runToEnd(pipeline.id);
    assert.equal(Date.parse(second.syncTime) - Date.parse(sourceWindow(second).start), 6 * HOUR, 'the next run starts from the lookback again, not from the truncated run\'s end');
  });

  it('an incremental table source reads past the cursor field\'s last committed value', async () => {
    const raw = await tableDestination(t, 'cursor_raw', ['id']);
    const rawAsSource = await tableDestination(t, 'cursor_raw', ['id'], 'source');
    const copy = await tableDestination(t, 'cursor_copy', ['id']);
    const load = await createPipeline(t, linearDocument(await eventsSource(t, api), raw, { writeMode: 'upsert' }));
    assert.equal((await runToEnd(load.id)).status, 'succeeded');
    const incremental = await createPipeline(t, linearDocument(rawAsSource, copy, { mode: 'incremental', cursorField: 'id', writeMode: 'upsert' }));
    const first = await runToEnd(incremental.id);
    assert.equal(first.status, 'succeeded', JSON.stringify(first.error));
    assert.equal(first.nodes.find((n: any) => n.nodeId === 'src').recordsRead, 60);

    api.records = EventsApi.events(10, { from: 61, endMinutesAgo: 0 });
    assert.equal((await runToEnd(load.id)).status, 'succeeded');
    const second = await runToEnd(incremental.id);
    assert.equal(second.nodes.find((n: any) => n.nodeId === 'src').recordsRead, 10, 'only records past id 60');
    assert.equal((await tableRecords(t, copy)).length, 70);
    const position = await env().db('pipelinePositions').where({ pipelineId: incremental.id }).first();
    assert.deepEqual(position.position, { cursorField: 'id', value: 70 });
  });
});
