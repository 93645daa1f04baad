import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createApp } from '../../../api/app';
import { SESSION_IDLE_MS } from '../../../mcp/server';
import { env } from '../../support/environment';
import { newKey, request } from '../../support/fixtures';
import { connectWatched } from '../../support/mcp-client';
import { createPipeline, EventsApi, eventsSource, linearDocument, PipelineTenant, tableDestination, useEventsApi } from '../../support/pipelines';

async function connect(key: string, path = '/mcp'): Promise<Client> {
  const client = new Client({ name: 'weft-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${env().baseUrl}${path}`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

const result = (res: unknown) => (res as { structuredContent?: Record<string, any> }).structuredContent!;

describe('The MCP endpoint, through the SDK’s own client', function () {
  this.timeout(60_000);
  const fixture = useEventsApi(() => EventsApi.events(10));
  let t: PipelineTenant;
  let pipelineId: string;
  before(async () => {
    t = fixture.t;
    const destination = await tableDestination(t, `mcp_${Date.now()}`, ['id']);
    pipelineId = (await createPipeline(t, linearDocument(await eventsSource(t, fixture.api), destination))).id;
  });

  it('initializes, lists tools with their schemas and annotations, and calls them on a workspace connection', async () => {
    const client = await connect(t.ws.apiKey);
    try {
      const { tools } = await client.listTools();
      const list = tools.find((tool) => tool.name === 'pipeline_list')!;
      assert.deepEqual(list.inputSchema.required, ['projectId']);
      assert.equal(list.annotations?.readOnlyHint, true);
      const limits = await client.callTool({ name: 'organization_api_limits_get', arguments: {} });
      assert.equal(limits.isError, undefined);
      assert.equal(result(limits).windowSeconds, 60);
      const pipelines = await client.callTool({ name: 'pipeline_list', arguments: { projectId: t.projectId } });
      assert.deepEqual(result(pipelines).pipelines.map((p: { id: string }) => p.id), [pipelineId]);
      // The tool's arguments are the list route's query schema: its tag filter too.
      assert.deepEqual(Object.keys(list.inputSchema.properties ?? {}).sort(), ['limit', 'name', 'offset', 'projectId', 'tag']);
      assert.equal((await t.client.patch(`/api/v1/projects/${t.projectId}/pipelines/${pipelineId}`, { tags: ['nightly'] })).status, 200);
      for (const [tag, expected] of [['nightly', [pipelineId]], ['hourly', []]] as const) {
        const tagged = await client.callTool({ name: 'pipeline_list', arguments: { projectId: t.projectId, tag } });
        assert.deepEqual(result(tagged).pipelines.map((p: { id: string }) => p.id), expected, tag);
        assert.deepEqual((await t.client.get(`/api/v1/projects/${t.projectId}/pipelines?tag=${tag}`)).body.pipelines.map((p: { id: string }) => p.id), expected, tag);
      }
      await assert.rejects(client.callTool({ name: 'pipeline_list', arguments: {} }), /projectId/, 'bad arguments are a JSON-RPC error');
      await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /Unknown tool/);
    } finally {
      await client.close();
    }
  });

  it('binds a project connection to its project, and answers refusals as tool errors with the HTTP codes', async () => {
    const bound = await connect(t.ws.apiKey, `/mcp/projects/${t.projectId}`);
    try {
      const { tools } = await bound.listTools();
      assert.equal(tools.find((tool) => tool.name === 'pipeline_get')!.inputSchema.required?.includes('projectId'), false);
      const got = await bound.callTool({ name: 'pipeline_get', arguments: { pipelineId } });
      assert.equal(result(got).pipeline.id, pipelineId);
      const missing = await bound.callTool({ name: 'pipeline_get', arguments: { pipelineId: '00000000-0000-4000-8000-000000000000' } });
      assert.equal(missing.isError, true);
      assert.equal(result(missing).code, 'not_found');
    } finally {
      await bound.close();
    }
    const narrow = await newKey(t.ws, { scopes: ['org:read'] });
    const client = await connect(narrow);
    try {
      const refused = await client.callTool({ name: 'pipeline_list', arguments: { projectId: t.projectId } });
      assert.equal(refused.isError, true);
      assert.equal(result(refused).code, 'insufficient_scope');
    } finally {
      await client.close();
    }
  });

  it('ends a session idle for longer than SESSION_IDLE_MS on the runtime’s clock: its id is unknown (404) after the next initialize', async () => {
    env().clock.set(Date.now());
    const { client: idle, streamOpened } = await connectWatched(t.ws.apiKey);
    try {
      // Its last request (the SDK's standalone stream) seen at the held time.
      await streamOpened;
      const sessionId = (idle.transport as StreamableHTTPClientTransport).sessionId!;
      const listTools = () => request('POST', '/mcp', {
        key: t.ws.apiKey,
        body: { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
        headers: { Accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
      });
      env().clock.advance(SESSION_IDLE_MS);
      await (await connect(t.ws.apiKey)).close();
      assert.equal((await listTools()).status, 200, 'idle for exactly SESSION_IDLE_MS, it is kept');
      env().clock.advance(SESSION_IDLE_MS + 1);
      // Idle sessions are closed when another one starts.
      await (await connect(t.ws.apiKey)).close();
      const ended = await listTools();
      assert.equal(ended.status, 404, JSON.stringify(ended.body));
      assert.equal(ended.body.code, 'not_found');
    } finally {
      await idle.close();
    }
  });

  it('keeps its sessions per API: a session one API started is unknown (404) to another API in the same process', async () => {
    const client = await connect(t.ws.apiKey);
    const other = createApp(env().dependencies()).listen(0, '127.0.0.1');
    try {
      await once(other, 'listening');
      const sessionId = (client.transport as StreamableHTTPClientTransport).sessionId!;
      const listTools = (baseUrl: string) => fetch(`${baseUrl}/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${t.ws.apiKey}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'mcp-session-id': sessionId },
        body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }),
      });
      assert.equal((await listTools(env().baseUrl)).status, 200, 'the API that started it knows it');
      const elsewhere = await listTools(`http://127.0.0.1:${(other.address() as AddressInfo).port}`);
      assert.equal(elsewhere.status, 404);
      assert.equal(((await elsewhere.json()) as { code: string }).code, 'not_found');
    } finally {
      await client.close();
      await new Promise((resolve) => other.close(resolve));
    }
  });

  it('refuses a call without a key, and a tools/call before initialization', async () => {
    const anonymous = await request('POST', '/mcp', { key: null, body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} } });
    assert.equal(anonymous.status, 401);
    const early = await request('POST', '/mcp', {
      key: t.ws.apiKey,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'organization_api_limits_get', arguments: {} } },
      headers: { Accept: 'application/json, text/event-stream' },
    });
    assert.equal(early.status, 400, JSON.stringify(early.body));
  });
});
