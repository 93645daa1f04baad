import assert from 'node:assert/strict';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { putApiLimits } from '../../services/tenancy/api-limits';
import { env } from '../support/environment';
import { holdRequestWindow, HttpResponse, newKey, newWorkspace, requestAt } from '../support/fixtures';
import { burst, useApiProcesses } from './support/concurrency-processes';
import { connectWatched } from '../support/mcp-client';

/**
 * Concurrency (reliability issue item 6b): request limits are exact across three API processes.
 * A burst of three times a bucket's limit, spread round robin over the three processes, inside one
 * 60-second window: exactly `limit` requests succeed, every other one is a 429 of that bucket, and
 * every answer reports the same window. For the key bucket, the workspace bucket, and HTTP and MCP
 * requests sharing one key's bucket. Two of the processes are processes of their own, which keep
 * the time the test's clock holds (WEFT_TEST_CLOCK_FILE): each test holds the window (holdRequestWindow).
 */
const LIMIT = 25;
const BURST = 3 * LIMIT;

interface Answer {
  status: number;
  code?: string;
  dimension?: string;
  limit: number;
  remaining: number;
  /** When this answer says its window ends (ms since the epoch). */
  windowEnd: number;
}

function answerOf(res: HttpResponse, receivedAt: number): Answer {
  const body = (typeof res.body === 'object' && res.body) || {};
  return {
    status: res.status,
    code: body.code,
    dimension: body.dimension,
    limit: Number(res.headers.get('x-ratelimit-limit')),
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    windowEnd: receivedAt + Number(res.headers.get('x-ratelimit-reset')) * 1000,
  };
}

/** Every answer must belong to one window: their window ends agree to the reset header's rounding. */
function assertOneWindow(answers: Answer[]): void {
  const ends = answers.map((a) => a.windowEnd);
  const spread = Math.max(...ends) - Math.min(...ends);
  assert.ok(spread <= 2_500, `the burst straddled two windows (window ends ${Math.min(...ends)}..${Math.max(...ends)}); started too late in a window?`);
}

function assertExact(answers: Answer[], limit: number, dimension: 'api_key' | 'workspace'): void {
  const statuses = answers.map((a) => a.status);
  const ok = answers.filter((a) => a.status === 200);
  const refused = answers.filter((a) => a.status === 429);
  assert.equal(ok.length, limit, `successes: ${statuses.join(',')}`);
  assert.equal(refused.length, answers.length - limit, `everything else is a 429: ${statuses.join(',')}`);
  for (const r of refused) {
    assert.equal(r.code, 'rate_limited');
    assert.equal(r.dimension, dimension);
    assert.equal(r.limit, limit);
    assert.equal(r.remaining, 0);
  }
  // Each success saw its own place in the bucket: remaining limit-1 … 0, each once.
  assert.deepEqual(ok.map((a) => a.remaining).sort((x, y) => x - y), Array.from({ length: limit }, (_, i) => i), 'X-RateLimit-Remaining of the successes');
  assertOneWindow(answers);
}

describe('Concurrency: request limits are exact across three API processes', function () {
  this.timeout(600_000);
  const processes = useApiProcesses(2);

  async function fire(keys: string[], count: number): Promise<Answer[]> {
    return burst(count, async (i) => {
      const res = await requestAt(processes.urls[i % processes.urls.length], 'GET', '/api/v1/organization', { key: keys[i % keys.length] });
      return answerOf(res, env().clock.now());
    });
  }

  it('key bucket: a burst of 3 × limit over 3 processes gives exactly `limit` successes and 429 api_key for the rest', async () => {
    const ws = await newWorkspace();
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 10 * BURST, apiKeyRequests: LIMIT });
    const key = await newKey(ws, { scopes: ['org:read'] });
    holdRequestWindow();
    const answers = await fire([key], BURST);
    assertExact(answers, LIMIT, 'api_key');
    // All three processes refuse the key for the rest of the window; another key of the workspace still works.
    for (const url of processes.urls) assert.equal((await requestAt(url, 'GET', '/api/v1/organization', { key })).status, 429);
    assert.equal((await requestAt(processes.urls[1], 'GET', '/api/v1/organization', { key: ws.apiKey })).status, 200);
  });

  it('workspace bucket: a burst of 3 × limit from three keys over 3 processes gives exactly `limit` successes and 429 workspace for the rest', async () => {
    const ws = await newWorkspace();
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: LIMIT, apiKeyRequests: 10 * BURST });
    const keys = [await newKey(ws, { scopes: ['org:read'] }), await newKey(ws, { scopes: ['org:read'] }), await newKey(ws, { scopes: ['org:read'] })];
    holdRequestWindow();
    // Keys rotate with a different period than processes, so every key reaches every process.
    const keyOf = (i: number) => Math.floor(i / processes.urls.length) % keys.length;
    const answers = await burst(BURST, async (i) => {
      const res = await requestAt(processes.urls[i % processes.urls.length], 'GET', '/api/v1/organization', { key: keys[keyOf(i)] });
      return answerOf(res, env().clock.now());
    });
    assertExact(answers, LIMIT, 'workspace');
    // A refused request spends no key budget: with the workspace bucket opened up (same window),
    // each key has used exactly what the workspace admitted for it, plus this request.
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 100 * BURST, apiKeyRequests: 10 * BURST });
    for (const [k, key] of keys.entries()) {
      const admitted = answers.filter((answer, i) => keyOf(i) === k && answer.status === 200).length;
      // The other processes learn of the new limits by NOTIFY, usually within a second (waited for
      // up to 10 s on a loaded machine); until then they refuse (a refusal counts nothing), so the
      // first success is this request's count.
      const asked = Date.now();
      let res = answerOf(await requestAt(processes.urls[k], 'GET', '/api/v1/organization', { key }), env().clock.now());
      while (res.status === 429 && Date.now() - asked < 10_000) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        res = answerOf(await requestAt(processes.urls[k], 'GET', '/api/v1/organization', { key }), env().clock.now());
      }
      assert.equal(res.status, 200);
      assert.equal(res.remaining, 10 * BURST - admitted - 1, `key ${k}: ${admitted} admitted in the burst`);
      assertOneWindow([...answers, res]);
    }
    const other = await newWorkspace();
    assert.equal((await requestAt(processes.urls[2], 'GET', '/api/v1/organization', { key: other.apiKey })).status, 200, 'another workspace is unaffected');
  });

  it('one key’s bucket is shared by HTTP and MCP requests on every process', async () => {
    const ws = await newWorkspace();
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 10 * BURST, apiKeyRequests: 2 * LIMIT });
    const key = await newKey(ws, { scopes: ['org:read'] });
    holdRequestWindow();
    // One MCP session per process; their handshakes count too. What is left is read from a probe.
    const sessions: Client[] = [];
    const streams: Array<Promise<void>> = [];
    for (const url of processes.urls) {
      const { client, streamOpened } = await connectWatched(key, { baseUrl: url, name: 'weft-reliability' });
      sessions.push(client);
      streams.push(streamOpened);
    }
    try {
      // Each session's stream GET is counted before it is answered: wait for all of them.
      await Promise.all(streams);
      const probe = answerOf(await requestAt(processes.urls[0], 'GET', '/api/v1/organization', { key }), env().clock.now());
      assert.equal(probe.status, 200);
      const left = probe.remaining;
      assert.ok(left >= LIMIT, `only ${left} requests left after the handshakes`);
      // A burst of 3 × LIMIT, alternately HTTP requests and MCP tool calls, over the three processes.
      const answers = await burst(BURST, async (i): Promise<Answer> => {
        const url = processes.urls[i % processes.urls.length];
        if (i % 2 === 0) return answerOf(await requestAt(url, 'GET', '/api/v1/organization', { key }), env().clock.now());
        try {
          await sessions[i % sessions.length].callTool({ name: 'organization_api_limits_get', arguments: {} });
          return { status: 200, limit: 2 * LIMIT, remaining: -1, windowEnd: NaN };
        } catch (error) {
          const refused = /\b429\b|rate_limited/.test((error as Error).message);
          return { status: refused ? 429 : 500, code: refused ? 'rate_limited' : (error as Error).message, limit: 2 * LIMIT, remaining: 0, windowEnd: NaN };
        }
      });
      const ok = answers.filter((a) => a.status === 200).length;
      const described = answers.map((a) => `${a.status}${a.status !== 200 && a.status !== 429 ? `(${a.code})` : ''}`).join(',');
      assert.equal(ok, left, `successes, HTTP and MCP together: ${described}`);
      assert.equal(answers.filter((a) => a.status === 429).length, BURST - left, `everything else is a 429: ${described}`);
      assertOneWindow([probe, ...answers.filter((a) => Number.isFinite(a.windowEnd))]);
    } finally {
      for (const session of sessions) await session.close().catch(() => undefined);
    }
  });
});
