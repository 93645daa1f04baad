import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { putApiLimits } from '../../../services/tenancy/api-limits';
import { env } from '../../support/environment';
import { connectWatched } from '../../support/mcp-client';
import { as, holdRequestWindow, newKey, newWorkspace } from '../../support/fixtures';
import { createPipeline, EventsApi, eventsSource, linearDocument, PipelineTenant, tableDestination, tableRecords, useEventsApi } from '../../support/pipelines';
import { settled } from '../../support/polling';

async function connect(key: string, path = '/mcp'): Promise<Client> {
  return (await connectWatched(key, { path, name: 'weft-tools-test' })).client;
}

type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; _meta?: Record<string, unknown> };

let keyCounter = 0;
const newIdempotencyKey = () => `mcp-test-${Date.now()}-${++keyCounter}`;

describe('MCP tools: pipelines, runs, schedules and sources', function () {
  this.timeout(120_000);
  const fixture = useEventsApi(() => EventsApi.events(30));
  let t: PipelineTenant;
  let client: Client;
  let bound: Client;

  /** Calls a tool and returns its result; `expectError` says whether the result must be a tool error. */
  async function call(on: Client, name: string, args: Record<string, unknown>, expectError = false): Promise<ToolResult> {
    const res = (await on.callTool({ name, arguments: args })) as ToolResult;
    assert.equal(Boolean(res.isError), expectError, `${name}: ${JSON.stringify(res.structuredContent)}`);
    return res;
  }

  const pollRun = (runId: string, done: (run: any) => boolean, timeoutMs = 60_000): Promise<any> =>
    settled(`run ${runId} through job_get`, async () => (await call(bound, 'job_get', { runId })).structuredContent!.run, done, timeoutMs, 200);

  const ended = (run: any) => ['succeeded', 'failed', 'canceled'].includes(run.status);

  async function pipelineCount(): Promise<number> {
    const res = await t.client.get(`/api/v1/projects/${t.projectId}/pipelines?limit=200`);
    assert.equal(res.status, 200);
    return res.body.pipelines.length;
  }

  before(async () => {
    t = fixture.t;
    client = await connect(t.key);
    bound = await connect(t.key, `/mcp/projects/${t.projectId}`);
  });
  after(async () => {
    await client.close();
    await bound.close();
  });

  it('pipeline_create makes a pipeline once per idempotencyKey, and refuses the key with other arguments', async () => {
    const source = await eventsSource(t, fixture.api);
    const destination = await tableDestination(t, `mcp_create_${Date.now()}`, ['id']);
    const document = linearDocument(source, destination, { writeMode: 'upsert' });
    const idempotencyKey = newIdempotencyKey();
    const before = await pipelineCount();
    const args = { projectId: t.projectId, name: `mcp-created-${Date.now()}`, document, commitMessage: 'from MCP', workspaceState: { zoom: 2 }, idempotencyKey };

    const first = await call(client, 'pipeline_create', args);
    const { pipeline, version, draft } = first.structuredContent!;
    assert.equal(version.commitMessage, 'from MCP');
    assert.deepEqual(draft.workspaceState, { zoom: 2 });
    assert.equal(pipeline.activeVersionId, version.id);
    assert.equal(first._meta?.idempotentReplayed, undefined);

    const again = await call(client, 'pipeline_create', args);
    assert.equal(again.structuredContent!.pipeline.id, pipeline.id, 'the replay returns the first result');
    assert.equal(again._meta?.idempotentReplayed, true);
    assert.equal(await pipelineCount(), before + 1, 'one pipeline for two calls');

    const other = await call(client, 'pipeline_create', { ...args, name: `${args.name}-other` }, true);
    assert.equal(other.structuredContent!.code, 'idempotency_key_reused');
    assert.equal(await pipelineCount(), before + 1);

    await assert.rejects(client.callTool({ name: 'pipeline_create', arguments: { projectId: t.projectId, name: 'no-key', document } }), /idempotencyKey/);
    const invalid = await call(client, 'pipeline_create', { ...args, name: 'bad-document', idempotencyKey: newIdempotencyKey(), document: linearDocument('00000000-0000-4000-8000-000000000000', destination) }, true);
    assert.equal(invalid.structuredContent!.status, 422, JSON.stringify(invalid.structuredContent));
    assert.equal(await pipelineCount(), before + 1, 'a refused create writes nothing');
  });

  it('pipeline_draft_save keeps a draft, refuses a stale basedOnVersionId, and pipeline_validate reports node problems', async () => {
    const source = await eventsSource(t, fixture.api);
    const destination = await tableDestination(t, `mcp_draft_${Date.now()}`, ['id']);
    const document = linearDocument(source, destination, { writeMode: 'upsert' });
    const pipeline = await createPipeline(t, document);

    const unfinished = { nodes: [...document.nodes, { id: 'calc', type: 'transform' }], edges: document.edges };
    const saved = await call(bound, 'pipeline_draft_save', { pipelineId: pipeline.id, document: unfinished, workspaceState: { x: 1 }, basedOnVersionId: pipeline.versionId });
    assert.equal(saved.structuredContent!.draft.basedOnVersionId, pipeline.versionId);
    const draft = await t.client.get(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/draft`);
    assert.deepEqual(draft.body.draft.document, unfinished, 'the HTTP draft is the one MCP saved');

    const validation = (await call(bound, 'pipeline_validate', { pipelineId: pipeline.id })).structuredContent!;
    assert.equal(validation.valid, false);
    assert.ok(validation.problems.some((p: { nodeId?: string }) => p.nodeId === 'calc'), JSON.stringify(validation.problems));

    // A newer version replaces the base: committed and activated (PUT), so v1 is neither active nor a branch head.
    const committed = await t.client.put(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}`, { document, commitMessage: 'newer' });
    assert.equal(committed.status, 200, JSON.stringify(committed.body));
    const stale = await call(bound, 'pipeline_draft_save', { pipelineId: pipeline.id, document, basedOnVersionId: pipeline.versionId }, true);
    assert.equal(stale.structuredContent!.code, 'stale_draft_base');
    assert.equal(stale.structuredContent!.status, 409);
    assert.equal(stale.structuredContent!.branchHeads.main, committed.body.version.id);
    const unchanged = await t.client.get(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/draft`);
    assert.deepEqual(unchanged.body.draft.document, unfinished, 'a refused save changes nothing');

    await call(bound, 'pipeline_draft_save', { pipelineId: pipeline.id, document, basedOnVersionId: committed.body.version.id });
    assert.equal((await call(bound, 'pipeline_validate', { pipelineId: pipeline.id })).structuredContent!.valid, true);
  });

  it('pipeline_execute launches once per key, and job_get follows the run to its per-node results', async () => {
    const source = await eventsSource(t, fixture.api);
    const destination = await tableDestination(t, `mcp_exec_${Date.now()}`, ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }));
    const idempotencyKey = newIdempotencyKey();

    const launched = (await call(bound, 'pipeline_execute', { pipelineId: pipeline.id, idempotencyKey })).structuredContent!.run;
    const replay = (await call(bound, 'pipeline_execute', { pipelineId: pipeline.id, idempotencyKey })).structuredContent!.run;
    assert.equal(replay.id, launched.id);
    const runs = await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`);
    assert.equal(runs.body.runs.length, 1, 'two calls, one run');

    const run = await pollRun(launched.id, ended);
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
    assert.equal(run.trigger, 'api');
    const destinationNode = run.nodes.find((n: { nodeId: string }) => n.nodeId === 'dst');
    assert.equal(destinationNode.recordsWritten, 30, JSON.stringify(run.nodes));
    assert.equal(run.nodes.find((n: { nodeId: string }) => n.nodeId === 'src').recordsRead, 30);
    assert.equal((await tableRecords(t, destination)).length, 30);
  });

  it('pipeline_run_cancel ends a running run canceled, with nothing committed', async () => {
    fixture.api.records = EventsApi.events(400);
    fixture.api.delayMs = 300;
    const source = await eventsSource(t, fixture.api);
    const destination = await tableDestination(t, `mcp_cancel_${Date.now()}`, ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }));
    const launched = (await call(client, 'pipeline_execute', { projectId: t.projectId, pipelineId: pipeline.id, idempotencyKey: newIdempotencyKey() })).structuredContent!.run;
    await pollRun(launched.id, (run) => run.status === 'running' || ended(run));

    const canceled = (await call(client, 'pipeline_run_cancel', { projectId: t.projectId, runId: launched.id })).structuredContent!.run;
    assert.ok(['running', 'canceled'].includes(canceled.status), canceled.status);
    const run = await pollRun(launched.id, ended);
    assert.equal(run.status, 'canceled');
    assert.equal((await tableRecords(t, destination)).length, 0, 'a canceled run commits nothing');

    const other = await as(t.ws.apiKey).post('/api/v1/projects', { name: `mcp-other-${Date.now()}` });
    const elsewhere = await call(client, 'pipeline_run_cancel', { projectId: other.body.project.id, runId: launched.id }, true);
    assert.equal(elsewhere.structuredContent!.status, 404, 'a run of another project is not found');
  });

  it('pipeline_schedule_* create a Temporal Schedule whose runs show trigger schedule, list it, pause and resume it, and delete it only with confirm', async () => {
    const source = await eventsSource(t, fixture.api);
    const destination = await tableDestination(t, `mcp_sched_${Date.now()}`, ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }));

    const schedule = (await call(bound, 'pipeline_schedule_create', { pipelineId: pipeline.id, intervalSeconds: 3600, idempotencyKey: newIdempotencyKey() })).structuredContent!.schedule;
    const listed = (await call(bound, 'pipeline_schedule_list', { pipelineId: pipeline.id })).structuredContent!.schedules;
    assert.deepEqual(listed.map((s: { id: string }) => s.id), [schedule.id]);
    const handle = env().temporal.schedule.getHandle(schedule.temporalScheduleId);
    const described = await handle.describe();
    assert.equal(described.state.paused, false);
    assert.deepEqual(described.spec.intervals?.map((i) => i.every), [3_600_000]);
    const attributes = described.typedSearchAttributes;
    assert.equal(attributes?.getAll().find((pair) => pair.key.name === 'PipelineId')?.value, pipeline.id, 'the schedule is found by PipelineId in the Web UI');

    // Temporal launches it now instead of in an hour.
    await handle.trigger();
    const runs: any[] = await settled('the triggered schedule’s run', async () => (await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`)).body.runs, (found: any[]) => found.length > 0, 30_000, 200);
    assert.equal(runs.length, 1);
    const run = await pollRun(runs[0].id, ended);
    assert.equal(run.trigger, 'schedule');
    assert.equal(run.status, 'succeeded', JSON.stringify(run.error));

    // Paused, it launches nothing until resumed; the list shows its state.
    const paused = (await call(bound, 'pipeline_schedule_update', { pipelineId: pipeline.id, scheduleId: schedule.id, paused: true })).structuredContent!.schedule;
    assert.equal(paused.spec.paused, true);
    assert.equal((await handle.describe()).state.paused, true);
    assert.equal((await call(bound, 'pipeline_schedule_list', { pipelineId: pipeline.id })).structuredContent!.schedules[0].spec.paused, true);
    await call(bound, 'pipeline_schedule_update', { pipelineId: pipeline.id, scheduleId: schedule.id, paused: false });
    assert.equal((await handle.describe()).state.paused, false);
    const missing = await bound.callTool({ name: 'pipeline_schedule_update', arguments: { pipelineId: pipeline.id, scheduleId: randomUUID(), paused: true } });
    assert.equal((missing.structuredContent as { code?: string }).code, 'not_found');

    const idempotencyKey = newIdempotencyKey();
    await assert.rejects(bound.callTool({ name: 'pipeline_schedule_delete', arguments: { pipelineId: pipeline.id, scheduleId: schedule.id, idempotencyKey } }), /confirm/);
    await assert.rejects(bound.callTool({ name: 'pipeline_schedule_delete', arguments: { pipelineId: pipeline.id, scheduleId: schedule.id, idempotencyKey, confirm: false } }), /confirm/);
    assert.equal((await handle.describe()).scheduleId, schedule.temporalScheduleId, 'still there without confirm');

    const deleted = await call(bound, 'pipeline_schedule_delete', { pipelineId: pipeline.id, scheduleId: schedule.id, idempotencyKey, confirm: true });
    assert.deepEqual(deleted.structuredContent, { deleted: true, scheduleId: schedule.id });
    const replayed = await call(bound, 'pipeline_schedule_delete', { pipelineId: pipeline.id, scheduleId: schedule.id, idempotencyKey, confirm: true });
    assert.equal(replayed._meta?.idempotentReplayed, true, 'a retried delete answers like the first');
    await assert.rejects(handle.describe(), /not found/i);
    assert.deepEqual((await call(bound, 'pipeline_schedule_list', { pipelineId: pipeline.id })).structuredContent!.schedules, []);
  });

  it('pipeline_delete needs confirm: true, and a retry with the same key answers like the first', async () => {
    const source = await eventsSource(t, fixture.api);
    const destination = await tableDestination(t, `mcp_delete_${Date.now()}`, ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination));
    const idempotencyKey = newIdempotencyKey();

    await assert.rejects(client.callTool({ name: 'pipeline_delete', arguments: { projectId: t.projectId, id: pipeline.id, idempotencyKey } }), /confirm/);
    assert.equal((await t.client.get(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}`)).status, 200, 'nothing deleted without confirm');

    const deleted = await call(client, 'pipeline_delete', { projectId: t.projectId, id: pipeline.id, idempotencyKey, confirm: true });
    assert.deepEqual(deleted.structuredContent, { deleted: true, pipelineId: pipeline.id });
    assert.equal((await t.client.get(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}`)).status, 404);
    const replayed = await call(client, 'pipeline_delete', { projectId: t.projectId, id: pipeline.id, idempotencyKey, confirm: true });
    assert.deepEqual(replayed.structuredContent, deleted.structuredContent);
    const fresh = await call(client, 'pipeline_delete', { projectId: t.projectId, id: pipeline.id, idempotencyKey: newIdempotencyKey(), confirm: true }, true);
    assert.equal(fresh.structuredContent!.status, 404, 'a new key acts again, and the pipeline is gone');
  });

  it('source_create configures an endpoint once per key, from either connection kind, and runs nothing', async () => {
    const requestsBefore = fixture.api.received.length;
    const idempotencyKey = newIdempotencyKey();
    const args = {
      name: `mcp-source-${Date.now()}`,
      namespace: 'mcp',
      contractKind: 'source_stream',
      pluginCapabilityInstallationId: t.httpInstallationId,
      target: { request: { url: `${fixture.api.baseUrl}events` }, response: { format: 'json', recordsPath: 'data' }, primaryKeys: ['id'] },
      idempotencyKey,
    };
    const created = (await call(client, 'source_create', args)).structuredContent!.dataEndpoint;
    assert.equal(created.role, 'source', 'role defaults to source');
    const replay = await call(bound, 'source_create', args);
    assert.equal(replay.structuredContent!.dataEndpoint.id, created.id, 'the same key on the bound connection replays');
    const read = await t.client.get(`/api/v1/data-endpoints/${created.id}`);
    assert.equal(read.status, 200);
    assert.equal(read.body.dataEndpoint.name, args.name);
    assert.equal(fixture.api.received.length, requestsBefore, 'creating a source reads nothing');

    const invalid = await call(client, 'source_create', { ...args, name: `${args.name}-2`, idempotencyKey: newIdempotencyKey(), target: { nope: true } }, true);
    assert.equal(invalid.structuredContent!.status, 422);
    assert.ok(invalid.structuredContent!.errors?.length, JSON.stringify(invalid.structuredContent));
  });

  it('a project-bound connection serves only its project', async () => {
    const other = await as(t.ws.apiKey).post('/api/v1/projects', { name: `mcp-bound-${Date.now()}` });
    const otherProjectId = other.body.project.id;
    const source = await eventsSource(t, fixture.api);
    const destination = await tableDestination(t, `mcp_bound_${Date.now()}`, ['id']);
    const pipeline = await createPipeline(t, linearDocument(source, destination));

    const otherConnection = await connect(t.key, `/mcp/projects/${otherProjectId}`);
    try {
      const missing = await call(otherConnection, 'pipeline_get', { pipelineId: pipeline.id }, true);
      assert.equal(missing.structuredContent!.code, 'not_found');
      await assert.rejects(otherConnection.callTool({ name: 'pipeline_get', arguments: { projectId: t.projectId, pipelineId: pipeline.id } }), /projectId/, 'a bound connection takes no projectId');
    } finally {
      await otherConnection.close();
    }

    const restricted = await newKey(t.ws, { scopes: ['pipelines:read'], projectIds: [otherProjectId] });
    await assert.rejects(connect(restricted, `/mcp/projects/${t.projectId}`), /403|404/, 'a key not allowed in the project cannot bind to it');
    const stranger = await newWorkspace();
    await assert.rejects(connect(stranger.apiKey, `/mcp/projects/${t.projectId}`), /404/, 'another workspace’s project is not found');
  });

  it('shares request limits with HTTP calls of the same key', async () => {
    holdRequestWindow();
    const ws = await newWorkspace();
    const key = await newKey(ws, { scopes: ['org:manage'] });
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 1000, apiKeyRequests: 12 });
    const { client: mcp, streamOpened } = await connectWatched(key, { name: 'weft-tools-test' });
    try {
      await streamOpened;
      const before = await as(key).get('/api/v1/organization');
      assert.equal(before.status, 200);
      const remainingBefore = Number(before.headers.get('x-ratelimit-remaining'));
      await call(mcp, 'organization_api_limits_get', {});
      const after = await as(key).get('/api/v1/organization');
      assert.equal(Number(after.headers.get('x-ratelimit-remaining')), remainingBefore - 2, 'the MCP call used one request of the key’s budget');

      let status = 200;
      for (let i = 0; i < 20 && status === 200; i++) status = (await as(key).get('/api/v1/organization')).status;
      assert.equal(status, 429);
      await assert.rejects(mcp.callTool({ name: 'organization_api_limits_get', arguments: {} }), /429|rate_limited|Too many/i);
    } finally {
      await mcp.close().catch(() => undefined);
    }
  });
});
