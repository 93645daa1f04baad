import assert from 'node:assert/strict';
import { putApiLimits } from '../../../services/tenancy/api-limits';
import { env } from '../../support/environment';
import { as, holdRequestWindow, HttpResponse, newKey, newWorkspace, workspaceRows } from '../../support/fixtures';
import { linearDocument, pipelineTenant, tableDestination } from '../../support/pipelines';

// MCP revision 2025-03-26 (which the server still negotiates) lets one HTTP request carry a
// JSON-RPC batch. Every message of it is a request of the key's and the workspace's buckets, as
// it would be sent alone: SPEC 8, every consumer request fits both.

/** The revision that allows batches. */
const BATCHING_REVISION = '2025-03-26';

interface JsonRpcAnswer {
  id?: number;
  result?: Record<string, any>;
  error?: { code: number; message: string };
}

interface McpExchange extends HttpResponse {
  /** The JSON-RPC answers, from the SSE stream or the JSON body. */
  answers: JsonRpcAnswer[];
}

/** A session over plain HTTP, so a test can send what the SDK client never does: a batch. */
async function rawSession(key: string, path = '/mcp'): Promise<(body: unknown) => Promise<McpExchange>> {
  const post = async (body: unknown, sessionId?: string): Promise<McpExchange> => {
    const response = await fetch(`${env().baseUrl}${path}`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${key}`,
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...(sessionId ? { 'Mcp-Session-Id': sessionId, 'Mcp-Protocol-Version': BATCHING_REVISION } : {}),
      },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    const type = response.headers.get('content-type') ?? '';
    let parsed: unknown = text;
    let answers: JsonRpcAnswer[] = [];
    if (/event-stream/.test(type)) {
      answers = text.split('\n').filter((line) => line.startsWith('data: ') && line.length > 6).map((line) => JSON.parse(line.slice(6)) as JsonRpcAnswer);
    } else if (/json/.test(type) && text) {
      parsed = JSON.parse(text);
      if (!/problem/.test(type)) answers = ([] as JsonRpcAnswer[]).concat(parsed as JsonRpcAnswer);
    }
    return { status: response.status, headers: response.headers, body: parsed, answers };
  };
  const initialized = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: BATCHING_REVISION, capabilities: {}, clientInfo: { name: 'weft-batch-test', version: '1.0.0' } } });
  assert.equal(initialized.status, 200, brief(initialized.body));
  assert.equal(initialized.answers[0]?.result?.protocolVersion, BATCHING_REVISION, 'the server negotiates the revision that allows batches');
  const sessionId = initialized.headers.get('mcp-session-id') ?? undefined;
  assert.ok(sessionId);
  assert.equal((await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId)).status, 202);
  return (body) => post(body, sessionId);
}

const toolCall = (id: number, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });

/** A body short enough for an assertion message. */
const brief = (body: unknown) => JSON.stringify(body).slice(0, 300);
const remaining = (res: HttpResponse) => Number(res.headers.get('x-ratelimit-remaining'));
const limitOf = (res: HttpResponse) => Number(res.headers.get('x-ratelimit-limit'));

describe('MCP JSON-RPC batches count one request per message', function () {
  this.timeout(120_000);
  // Each test counts requests within one window: the test API's clock holds it still.
  beforeEach(holdRequestWindow);

  const cases = [
    { name: 'the key’s bucket, counted one by one', limits: { workspaceRequests: 1000, apiKeyRequests: 100 }, bucket: 'apiKeyRequests' },
    { name: 'the workspace’s bucket, counted one by one', limits: { workspaceRequests: 100, apiKeyRequests: 1000 }, bucket: 'workspaceRequests' },
    { name: 'the key’s bucket, spent from a lease', limits: { workspaceRequests: 200_000, apiKeyRequests: 100_000 }, bucket: 'apiKeyRequests' },
    { name: 'the workspace’s bucket, spent from a lease', limits: { workspaceRequests: 100_000, apiKeyRequests: 200_000 }, bucket: 'workspaceRequests' },
    // A lease of a sixteenth of about 320 holds fewer than the batch needs: it goes back, and the batch is charged in one statement.
    { name: 'the key’s bucket, beyond what its lease holds', limits: { workspaceRequests: 100_000, apiKeyRequests: 320 }, bucket: 'apiKeyRequests' },
  ] as const;
  for (const { name, limits, bucket } of cases) {
    it(`a batch of 20 tools/call messages is answered in full and spends 20 requests of ${name}`, async () => {
      const ws = await newWorkspace();
      const key = await newKey(ws, { scopes: ['org:manage', 'pipelines:read'] });
      await putApiLimits(env(), env().db, ws.workspaceId, limits);
      const post = await rawSession(key);
      const before = await as(key).get('/api/v1/organization');
      assert.equal(before.status, 200);
      assert.equal(limitOf(before), limits[bucket], 'the headers show the bucket under test');

      const batch = Array.from({ length: 20 }, (_, i) => (i % 2 ? toolCall(i + 1, 'organization_api_limits_get', {}) : toolCall(i + 1, 'pipeline_list', { projectId: ws.projectId })));
      const answered = await post(batch);
      assert.equal(answered.status, 200, brief(answered.body));
      assert.deepEqual(answered.answers.map((answer) => answer.id).sort((a, b) => a! - b!), batch.map((message) => message.id), 'every message is answered');
      for (const answer of answered.answers) assert.equal(answer.result?.isError, undefined, brief(answer));
      assert.equal(remaining(answered), remaining(before) - 20, 'the batch’s own headers count its 20 messages');

      const after = await as(key).get('/api/v1/organization');
      assert.equal(limitOf(after), limits[bucket]);
      assert.equal(remaining(after), remaining(before) - 21, 'the batch spent 20 requests, and the GET after it one');
    });
  }

  it('a batch that does not fit the key’s bucket is answered 429 whole with Retry-After, runs nothing and spends nothing', async () => {
    const t = await pipelineTenant(env().baseUrl);
    const source = await tableDestination(t, `batch_source_${Date.now()}`, ['id'], 'source');
    const destination = await tableDestination(t, `batch_destination_${Date.now()}`, ['id']);
    const document = linearDocument(source, destination);
    await putApiLimits(env(), env().db, t.ws.workspaceId, { workspaceRequests: 1000, apiKeyRequests: 40 });
    const post = await rawSession(t.key);
    const pipelines = () => t.client.get(`/api/v1/projects/${t.projectId}/pipelines?limit=200`);
    const before = await pipelines();
    assert.equal(before.status, 200);
    assert.equal(limitOf(before), 40);
    const left = remaining(before);
    assert.ok(left > 3, `${left} requests left for the test`);
    const creates = (count: number, tag: string) =>
      Array.from({ length: count }, (_, i) => toolCall(i + 1, 'pipeline_create', { projectId: t.projectId, name: `batch-${tag}-${i}`, document, idempotencyKey: `batch-${tag}-${Date.now()}-${i}` }));

    const rowsBefore = await workspaceRows([t.ws.workspaceId]);
    const refused = await post(creates(left + 1, 'over'));
    assert.equal(refused.status, 429, brief(refused.body));
    assert.equal(refused.body.code, 'rate_limited');
    assert.equal(refused.body.dimension, 'api_key');
    assert.deepEqual(refused.answers, [], 'no JSON-RPC answer: nothing in the batch was taken');
    const retryAfter = Number(refused.headers.get('retry-after'));
    assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${refused.headers.get('retry-after')}`);
    assert.equal(limitOf(refused), 40);
    assert.equal(remaining(refused), left, 'the refused batch spent nothing, and says what is left');
    assert.deepEqual(await workspaceRows([t.ws.workspaceId]), rowsBefore, 'no call of the refused batch ran');

    const between = await pipelines();
    assert.equal(remaining(between), left - 1, 'the refused batch spent no request, its carrying one included');
    assert.equal(between.body.pipelines.length, before.body.pipelines.length);

    // What is left fits exactly: every call runs, and the bucket is empty after it.
    const fitting = await post(creates(left - 1, 'fits'));
    assert.equal(fitting.status, 200, brief(fitting.body));
    assert.equal(fitting.answers.length, left - 1);
    for (const answer of fitting.answers) assert.equal(answer.result?.isError, undefined, brief(answer));
    assert.equal(remaining(fitting), 0);
    assert.equal((await pipelines()).status, 429, 'the batch spent the rest of the key’s bucket');
  });

  it('a batch that does not fit the workspace’s bucket is refused whole, for another key’s use of the workspace', async () => {
    const ws = await newWorkspace();
    const key = await newKey(ws, { scopes: ['org:manage'] });
    const other = await newKey(ws, { scopes: ['org:manage'] });
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 30, apiKeyRequests: 100 });
    const post = await rawSession(key);
    const spent = await as(other).get('/api/v1/organization');
    assert.equal(limitOf(spent), 30);
    const left = remaining(spent);

    const refused = await post(Array.from({ length: left + 1 }, (_, i) => toolCall(i + 1, 'organization_api_limits_get', {})));
    assert.equal(refused.status, 429, brief(refused.body));
    assert.equal(refused.body.dimension, 'workspace');
    assert.equal(remaining(refused), left);
    assert.equal(remaining(await as(other).get('/api/v1/organization')), left - 1, 'the workspace’s bucket lost only the other key’s GET');
  });

  it('a single message and a batch of one each count as one request', async () => {
    const ws = await newWorkspace();
    const key = await newKey(ws, { scopes: ['org:manage'] });
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 1000, apiKeyRequests: 100 });
    const post = await rawSession(key);
    const single = await post(toolCall(1, 'organization_api_limits_get', {}));
    assert.equal(single.status, 200);
    const one = await post([toolCall(2, 'organization_api_limits_get', {})]);
    assert.equal(one.status, 200);
    assert.equal(one.answers.length, 1);
    assert.equal(remaining(one), remaining(single) - 1);
  });
});
