import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { apiRoutes } from '../../../api/routes';
import { CONSOLE_OPERATION_ROUTES } from '../../../console/server';
import { CONSOLE_PAGES } from '../../../console/server/pages';
import { env } from '../../support/environment';
import { as, holdRequestWindow, newWorkspace, request, requestAt } from '../../support/fixtures';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, pipelineTenant, PipelineTenant, tableDestination, waitForRun } from '../../support/pipelines';
import { BUILT_START, freePort, RunningScript, startScript } from '../../support/processes';
import { scrape, total, unboundedLabels } from '../../support/prometheus';
import { customerOntology, ontologyTenant } from '../../support/ontology';
import { action, managedTable, putPolicy, writeTenant } from '../../support/source-writes';

/*
 * GET /metrics of the API and of a worker process, scraped over HTTP as Prometheus would: counters
 * move after requests and runs, and no label carries an id, a key or a record value. (The test
 * environment's API and worker share one process, so the API's endpoint shows the run metrics too.)
 */
describe('Prometheus metrics', function () {
  this.timeout(180_000);
  const MARKER = `marker-${randomUUID().slice(0, 8)}`;
  let events: EventsApi;
  let t: PipelineTenant;
  let pipelineId: string;

  before(async () => {
    events = await new EventsApi().start();
    events.records = EventsApi.events(30).map((record) => ({ ...record, status: MARKER }));
    t = await pipelineTenant(events.baseUrl);
    const source = await eventsSource(t, events);
    const destination = await tableDestination(t, 'metric_events', ['id']);
    pipelineId = (await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }))).id;
  });
  after(() => events.close());

  it('serves Prometheus text on its own port, without authentication, and nothing else there', async () => {
    const { contentType, samples } = await scrape(env().metricsUrl);
    assert.match(contentType, /^text\/plain; version=0\.0\.4/);
    assert.ok(samples.some((s) => s.name === 'process_cpu_user_seconds_total'), 'the default process metrics');
    assert.notEqual(new URL(env().metricsUrl).port, new URL(env().baseUrl).port);
    const other = await fetch(env().metricsUrl.replace(/\/metrics$/, '/api/v1/organization'));
    assert.equal(other.status, 404);
    // And the public API does not serve /metrics.
    assert.equal((await requestAt(env().baseUrl, 'GET', '/metrics')).status, 404);
  });

  it('counts requests by route template, method and status, and 429s by bucket', async () => {
    holdRequestWindow();
    const before = (await scrape(env().metricsUrl)).samples;
    for (let i = 0; i < 3; i++) assert.equal((await t.client.get(`/api/v1/projects/${t.projectId}/pipelines`)).status, 200);
    // Raw paths with ids never become labels: each of these is the same template or `unmatched`.
    for (let i = 0; i < 5; i++) await t.client.get(`/api/v1/projects/${randomUUID()}/pipelines`);
    for (let i = 0; i < 5; i++) await t.client.get(`/nowhere/${randomUUID()}`);
    const tiny = await newWorkspace();
    assert.equal((await as(tiny.apiKey).put('/api/v1/api-limits', { workspaceRequests: 1, apiKeyRequests: 1 })).status, 200);
    assert.equal((await as(tiny.apiKey).get('/api/v1/api-limits')).status, 429);

    const after = (await scrape(env().metricsUrl)).samples;
    const count = (samples: typeof before, labels: Record<string, string>) => total(samples, 'weft_http_request_duration_seconds_count', labels);
    const ok = { method: 'GET', status: '200' };
    // Routes match by template; the template's name of the parameter is whatever the router uses.
    const routes = new Set(after.filter((s) => s.name === 'weft_http_request_duration_seconds_count').map((s) => s.labels.route));
    const pipelinesRoute = [...routes].find((r) => /^\/api\/v1\/projects\/:[A-Za-z_]+\/pipelines$/.test(r));
    assert.ok(pipelinesRoute, `no template route for the pipelines list among ${[...routes].join(', ')}`);
    assert.ok(count(after, { ...ok, route: pipelinesRoute }) - count(before, { ...ok, route: pipelinesRoute }) >= 3);
    assert.ok(count(after, { method: 'GET', route: 'unmatched', status: '404' }) - count(before, { method: 'GET', route: 'unmatched', status: '404' }) >= 5);
    assert.ok(total(after, 'weft_http_request_duration_seconds_bucket', { route: pipelinesRoute, le: '+Inf' }) > 0, 'a latency histogram');
    assert.ok(total(after, 'weft_http_rate_limited_total', { bucket: 'api_key' }) - total(before, 'weft_http_rate_limited_total', { bucket: 'api_key' }) >= 1);
    for (const r of routes) assert.ok(r === 'unmatched' || r.startsWith('/'), `route label ${r}`);
  });

  it('counts a run: started and succeeded by trigger, its duration, records read and written, pages, charges and the pool', async () => {
    const before = (await scrape(env().metricsUrl)).samples;
    const run = await waitForRun(t, (await launch(t, pipelineId)).id);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    const after = (await scrape(env().metricsUrl)).samples;
    const moved = (name: string, labels: Record<string, string> = {}) => total(after, name, labels) - total(before, name, labels);

    assert.ok(moved('weft_pipeline_runs_started_total', { trigger: 'api' }) >= 1);
    assert.ok(moved('weft_pipeline_runs_ended_total', { trigger: 'api', status: 'succeeded' }) >= 1);
    assert.ok(moved('weft_pipeline_run_duration_seconds_count', { trigger: 'api', status: 'succeeded' }) >= 1);
    assert.ok(moved('weft_pipeline_records_read_total', { capability: 'http_dataset' }) >= 30);
    assert.ok(moved('weft_pipeline_pages_fetched_total', { capability: 'http_dataset' }) >= 2);
    assert.ok(moved('weft_pipeline_records_written_total', { capability: 'managed_table' }) >= 30);
    assert.ok(moved('weft_metered_operations_total', { kind: 'pipeline_run' }) >= 1);
    assert.ok(moved('weft_metered_amount_total', { kind: 'pipeline_run' }) > 0);
    assert.ok(total(after, 'weft_db_pool_connections', { state: 'max' }) >= 10);
    assert.ok(after.some((s) => s.name === 'weft_db_pool_waiting'));
  });

  it('counts remote errors by capability and code', async () => {
    const before = (await scrape(env().metricsUrl)).samples;
    events.failNext = 100;
    try {
      const run = await waitForRun(t, (await launch(t, pipelineId)).id, undefined, 120_000);
      assert.equal(run.status, 'failed');
    } finally {
      events.failNext = 0;
    }
    const after = (await scrape(env().metricsUrl)).samples;
    const moved = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
    assert.ok(moved('weft_remote_errors_total', { capability: 'http_dataset', operation: 'read' }) >= 1);
    assert.ok(moved('weft_pipeline_runs_ended_total', { trigger: 'api', status: 'failed' }) >= 1);
  });

  it('times SPARQL queries and counts their refusals, and counts governed writes by event', async () => {
    const before = (await scrape(env().metricsUrl)).samples;
    const o = await ontologyTenant();
    await customerOntology(o);
    assert.equal((await as(o.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
    const ask = (text: string) => request('GET', `${o.base}/sparql?query=${encodeURIComponent(text)}`, { key: o.key });
    assert.equal((await ask('SELECT ?s WHERE { ?s ?p ?o } LIMIT 1')).status, 200);
    assert.equal((await ask('SELECT WHERE {')).status, 400, 'a query that does not parse is a bad request (SPARQL 1.1 Protocol)');
    const w = await writeTenant();
    const endpointId = await managedTable(w);
    await putPolicy(w, endpointId);
    const written = await w.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, action(w, { id: 'empty', version: '0' }, { operation: 'append', rows: [{ id: 1, name: MARKER }] }));
    assert.ok(written.status < 300, JSON.stringify(written.body));
    const after = (await scrape(env().metricsUrl)).samples;
    const moved = (name: string, labels: Record<string, string>) => total(after, name, labels) - total(before, name, labels);
    assert.ok(moved('weft_query_duration_seconds_count', { kind: 'sparql', outcome: 'ok' }) >= 1);
    assert.ok(moved('weft_query_refusals_total', { kind: 'sparql', code: 'malformed_query' }) >= 1);
    assert.ok(moved('weft_governed_write_events_total', { event: 'applied' }) >= 1);
    assert.ok(moved('weft_metered_operations_total', { kind: 'governed_write' }) >= 1);
    // The query threads' heaps, which the process's own nodejs_heap_* leave out: each as its last query left it.
    const used = total(after, 'weft_sparql_thread_heap_bytes', { kind: 'used' });
    const committed = total(after, 'weft_sparql_thread_heap_bytes', { kind: 'committed' });
    assert.ok(used > 1_000_000 && committed >= used, `query threads' heaps: ${used} used of ${committed} committed`);
  });

  it('keeps every label bounded: no uuid, key or record value after the workload', async () => {
    const { samples } = await scrape(env().metricsUrl);
    assert.deepEqual(unboundedLabels(samples, [MARKER, t.ws.workspaceId, t.projectId]), []);
    const routes = new Set(samples.filter((s) => s.labels.route !== undefined).map((s) => s.labels.route));
    // Route labels are templates: at most one per declared route, plus the console's session, invite,
    // sign-in, asset and open pages, the probe, MCP and "unmatched" (fewer than 30).
    const declared = new Set([...apiRoutes, ...CONSOLE_OPERATION_ROUTES, ...CONSOLE_PAGES].map((route) => route.path)).size;
    assert.ok(routes.size < declared + 30, `${routes.size} route labels for ${declared} declared routes: ${[...routes].sort().join(', ')}`);
  });

  describe('a worker process', () => {
    let worker: RunningScript | undefined;
    let metricsUrl: string;

    before(async () => {
      // The run goes to the worker process: the test environment's own worker stops meanwhile.
      await env().stopWorker();
      const port = await freePort();
      metricsUrl = `http://127.0.0.1:${port}/metrics`;
      worker = await startScript(BUILT_START, ['worker'], { WEFT_WORKER_METRICS_PORT: String(port), LOG_LEVEL: 'info' }, /worker: polling/, 120_000);
    });
    after(async () => {
      await worker?.stop();
      await env().startWorker();
    });

    it('serves its run metrics and the Temporal SDK\'s worker metrics on WEFT_WORKER_METRICS_PORT', async () => {
      const run = await waitForRun(t, (await launch(t, pipelineId)).id);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
      const { samples } = await scrape(metricsUrl);
      // A process of its own: these count this one run only.
      assert.equal(total(samples, 'weft_pipeline_runs_started_total', { trigger: 'api' }), 1);
      assert.equal(total(samples, 'weft_pipeline_runs_ended_total', { trigger: 'api', status: 'succeeded' }), 1);
      assert.equal(total(samples, 'weft_pipeline_records_read_total', { capability: 'http_dataset' }), 30);
      const temporal = new Set(samples.filter((s) => s.name.startsWith('temporal_')).map((s) => s.name));
      // Task slots, pollers, poll latency (the core's long requests are its polls) and schedule-to-start.
      for (const name of ['temporal_worker_task_slots_available', 'temporal_worker_task_slots_used', 'temporal_num_pollers', 'temporal_long_request_latency_seconds_bucket',
        'temporal_activity_schedule_to_start_latency_seconds_bucket', 'temporal_workflow_task_schedule_to_start_latency_seconds_bucket']) {
        assert.ok(temporal.has(name), `${name} missing; the core served: ${[...temporal].sort().join(', ')}`);
      }
      assert.deepEqual(unboundedLabels(samples, [MARKER, t.ws.workspaceId, t.projectId]), []);
    });
  });
});
