import assert from 'node:assert/strict';
import { within } from '../../support/polling';
import { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { activeTracer, inSpan, startTracing, stopTracing, tracingConfigured, workerTracingOptions } from '../../../observability/tracing';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { workflowBundlePath } from '../../../worker/workflow-bundle';
import { env } from '../../support/environment';
import { startApiScript } from '../../support/processes';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, pipelineTenant, PipelineTenant, tableDestination, waitForRun } from '../../support/pipelines';

/*
 * OpenTelemetry traces with an in-memory exporter: a pipeline launched over HTTP gives one trace
 * from the launch request, through the workflow Temporal's interceptors carry it into, to the
 * activities and their database and remote calls. The test environment's worker is restarted with
 * tracing on (a worker takes its interceptors when it is created), and again without it after.
 */
describe('OpenTelemetry traces', function () {
  this.timeout(180_000);
  const exporter = new InMemorySpanExporter();
  let events: EventsApi;
  let t: PipelineTenant;
  let pipelineId: string;
  let tracedWorkflowId: string;

  before(async () => {
    events = await new EventsApi().start();
    events.records = EventsApi.events(30);
    t = await pipelineTenant(events.baseUrl);
    const document = linearDocument(await eventsSource(t, events), await tableDestination(t, 'traced_events', ['id']), { writeMode: 'upsert' });
    pipelineId = (await createPipeline(t, document)).id;
    await env().stopWorker();
    await startTracing({ serviceName: 'weft-test', exporter, batch: false });
    await env().startWorker();
  });

  after(async () => {
    await env().stopWorker();
    await stopTracing();
    await env().startWorker();
    await events.close();
  });

  /** Spans reach the exporter when they end (the workflow's after its activation): polled until `found` holds. */
  async function spansUntil(found: (spans: ReadableSpan[]) => boolean, timeoutMs = 60_000): Promise<ReadableSpan[]> {
    const spans = await within(timeoutMs, () => exporter.getFinishedSpans(), found, 200);
    if (!found(spans)) throw new Error(`spans not found; exported: ${spans.map((s) => s.name).join(', ')}`);
    return spans;
  }

  it('follows a launch from the HTTP request through the workflow to the commit activity, its SQL and its remote reads, in one trace', async () => {
    const run = await waitForRun(t, (await launch(t, pipelineId)).id);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    tracedWorkflowId = run.workflow.workflowId;

    const isLaunch = (s: ReadableSpan) => s.kind === SpanKind.SERVER && /^POST \/api\/v1\/projects\/:[A-Za-z_]+\/pipelines\/:[A-Za-z_]+\/execute$/.test(s.name);
    // The workflow's own spans leave its sandbox after its activations, so they may come last.
    const expected = ['StartWorkflow:pipelineRunWorkflow', 'RunWorkflow:pipelineRunWorkflow', 'StartActivity:extractSource', 'RunActivity:extractSource', 'StartActivity:commitRun', 'RunActivity:commitRun', 'remote read'];
    const spans = await spansUntil((all) => {
      const request = all.find(isLaunch);
      const names = new Set(all.filter((s) => s.spanContext().traceId === request?.spanContext().traceId).map((s) => s.name));
      return Boolean(request) && expected.every((name) => names.has(name));
    });
    const request = spans.find(isLaunch)!;
    const traceId = request.spanContext().traceId;
    const inTrace = spans.filter((s) => s.spanContext().traceId === traceId);
    const named = (name: string) => inTrace.find((s) => s.name === name);

    assert.equal(request.parentSpanId, undefined, 'the request span is the root');
    assert.equal(request.attributes['http.response.status_code'], 202);
    const start = named('StartWorkflow:pipelineRunWorkflow');
    assert.ok(start, 'the client interceptor\'s span');
    assert.equal(start.parentSpanId, request.spanContext().spanId);
    const commit = named('RunActivity:commitRun');
    assert.ok(commit);
    assert.equal(named('RunWorkflow:pipelineRunWorkflow')?.parentSpanId, start.spanContext().spanId, 'the workflow continues the start\'s trace');
    // The activities hang under the workflow's StartActivity spans, which the sandbox exported through the sink.
    const scheduledCommit = inTrace.find((s) => s.spanContext().spanId === commit.parentSpanId);
    assert.equal(scheduledCommit?.name, 'StartActivity:commitRun');
    // The run's database statements and its remote page reads are children in the same trace.
    assert.ok(inTrace.some((s) => s.attributes['db.system'] === 'postgresql' && s.parentSpanId === commit.spanContext().spanId), 'SQL under the commit activity');
    const reads = inTrace.filter((s) => s.name === 'remote read');
    assert.ok(reads.every((s) => inTrace.find((p) => p.spanContext().spanId === s.parentSpanId)?.name === 'RunActivity:extractSource'));
    assert.ok(reads.length >= 1, `a span per remote read; the trace: ${inTrace.map((s) => s.name).join(', ')}`);
    assert.ok(reads.every((s) => s.attributes['weft.capability'] === 'http_dataset'));
  });

  it('keeps workflows deterministic with tracing turned on or off: a traced run replays on either bundle, and recorded histories on the traced one', async () => {
    const [plain, traced] = await Promise.all([workflowBundlePath(undefined, false), workflowBundlePath(undefined, true)]);
    assert.notEqual(plain.codePath, traced.codePath);
    const history = await env().temporal.workflow.getHandle(tracedWorkflowId).fetchHistory();
    const started = history.events![0].workflowExecutionStartedEventAttributes!;
    assert.ok(started.header?.fields?.['_tracer-data'], 'the traced run carries the trace context in its start');
    for (const bundle of [plain, traced]) await Worker.runReplayHistory({ workflowBundle: { codePath: bundle.codePath } }, history, tracedWorkflowId);
    const folder = path.join(__dirname, '..', '..', 'data', 'workflow-histories');
    const recorded = readdirSync(folder).filter((file) => file.endsWith('.binpb'))
      .map((file) => ({ workflowId: file, history: temporal.api.history.v1.History.decode(readFileSync(path.join(folder, file))) }));
    assert.ok(recorded.length > 0);
    const failures: string[] = [];
    for await (const result of Worker.runReplayHistories({ workflowBundle: { codePath: traced.codePath } }, recorded)) {
      if (result.error) failures.push(`${result.workflowId}: ${result.error instanceof Error ? result.error.message : String(result.error)}`);
    }
    assert.deepEqual(failures, []);
  });

  it("keeps a failed statement's values and an error's message out of every span", async () => {
    const value = `weft-traced-secret-${Date.now()}`;
    exporter.reset();
    // pg quotes the bad input in its message ('invalid input syntax for type uuid: "…"'), and knex
    // by default writes the bound value into the SQL of the error it throws.
    const failure = await env().db.raw('select ?::uuid as id', [value]).then(() => undefined, (error: Error) => error);
    assert.ok(failure && failure.message.includes('$1'), 'the thrown error names the placeholder');
    assert.ok(!failure.message.includes(`'${value}'`), 'the thrown error does not write the bound value into the SQL');
    await assert.rejects(inSpan('failing work', {}, async () => {
      throw Object.assign(new Error(`remote said ${value}`), { code: 'remote_failed' });
    }));
    const spans = await spansUntil((found) => found.some((s) => s.name === 'db SELECT' && s.status.code === SpanStatusCode.ERROR) && found.some((s) => s.name === 'failing work'));
    const failedSelect = spans.find((s) => s.name === 'db SELECT' && s.status.code === SpanStatusCode.ERROR)!;
    assert.equal(failedSelect.status.message, 'DatabaseError 22P02');
    assert.equal(spans.find((s) => s.name === 'failing work')!.status.message, 'Error remote_failed');
    assert.deepEqual(spans.filter((s) => JSON.stringify({ attributes: s.attributes, status: s.status, events: s.events }).includes(value)).map((s) => s.name), []);
  });

  it('is on only with an OTLP endpoint, and off records nothing and installs no worker interceptor', async () => {
    assert.equal(tracingConfigured({}), false);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), true);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }), true);
    assert.equal(tracingConfigured({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }), false);
    await stopTracing();
    assert.equal(activeTracer(), undefined);
    assert.equal(workerTracingOptions().interceptors, undefined);
    exporter.reset();
    assert.equal((await t.client.get(`/api/v1/projects/${t.projectId}/pipelines`)).status, 200);
    assert.deepEqual(exporter.getFinishedSpans().map((s) => s.name), []);
  });

  it('exports over OTLP/HTTP from an API process started with OTEL_EXPORTER_OTLP_ENDPOINT', async () => {
    // A real HTTP collector: it keeps what the exporter posts to /v1/traces.
    const posted: string[] = [];
    const collector = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk)).on('end', () => {
        if (req.url === '/v1/traces') posted.push(text);
        res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    const { api, url } = await startApiScript({
      WEFT_METRICS_PORT: 'off',
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(collector.address() as AddressInfo).port}`,
      OTEL_BSP_SCHEDULE_DELAY: '100',
      LOG_LEVEL: 'info',
    });
    try {
      const res = await fetch(`${url}/api/v1/projects/${t.projectId}/pipelines`, { headers: { Authorization: `Bearer ${t.key}` } });
      assert.equal(res.status, 200);
      await within(30_000, () => posted, (bodies) => bodies.some((body) => body.includes('GET /api/v1/projects/:project_id/pipelines')), 100);
      const exported = posted.join('\n');
      assert.ok(exported.includes('GET /api/v1/projects/:project_id/pipelines'), `no request span exported: ${exported.slice(0, 500)}`);
      assert.ok(exported.includes('weft-api'), 'the service name');
      assert.ok(exported.includes('postgresql'), 'the request\'s SQL spans');
    } finally {
      await api.stop();
      collector.close();
    }
  });
});
