import assert from 'node:assert/strict';
import { createDb } from '../../../db/connection';
import { DefinitionCache } from '../../../services/shared/definition-cache';
import { authenticateRequest, RequestAdmission } from '../../../services/tenancy/request-authentication';
import { getApiLimits, putApiLimits, WINDOW_SECONDS } from '../../../services/tenancy/api-limits';
import { env } from '../../support/environment';
import { as, holdRequestWindow, HttpResponse, keyIdOf, newKey, newWorkspace, requestAt } from '../../support/fixtures';
import { settled } from '../../support/polling';
import { RunningScript, startApiScript } from '../../support/processes';

const rateHeaders = (res: HttpResponse) => ({
  limit: Number(res.headers.get('x-ratelimit-limit')),
  remaining: Number(res.headers.get('x-ratelimit-remaining')),
  reset: Number(res.headers.get('x-ratelimit-reset')),
});

function assertRateHeaders(res: HttpResponse, limit: number, remaining: number): void {
  const headers = rateHeaders(res);
  assert.equal(headers.limit, limit, 'X-RateLimit-Limit');
  assert.equal(headers.remaining, remaining, 'X-RateLimit-Remaining');
  assert.ok(Number.isInteger(headers.reset) && headers.reset >= 0 && headers.reset <= 60, `X-RateLimit-Reset ${headers.reset}`);
}

function assertTooManyRequests(res: HttpResponse, limit: number, dimension: 'api_key' | 'workspace'): void {
  assert.equal(res.status, 429, JSON.stringify(res.body));
  assert.equal(res.body.code, 'rate_limited');
  assert.equal(res.body.dimension, dimension);
  assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
  const retryAfter = Number(res.headers.get('retry-after'));
  assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After ${res.headers.get('retry-after')}`);
  assertRateHeaders(res, limit, 0);
  assert.ok(rateHeaders(res).reset >= 1);
}

/**
 * Another API process (`scripts/start.ts api`, with `settings`) on the same database, started
 * before the enclosing describe's tests and stopped after them: `url` once started.
 */
function anotherApi(settings: Record<string, string> = {}): { url: string } {
  const api = { url: '' };
  let running: RunningScript | undefined;
  before(async () => {
    ({ api: running, url: api.url } = await startApiScript(settings));
  });
  after(async () => {
    if (running && running.child.exitCode === null) assert.equal(await running.stop('SIGTERM'), 0, running.output());
  });
  return api;
}

describe('Request limits', () => {
  describe('GET and PUT /api/v1/api-limits', () => {
    // Each test counts requests within one window: the test API's clock holds it still.
    beforeEach(holdRequestWindow);

    it('answers the defaults: 600 per workspace, 120 per key, 60-second windows', async () => {
      const ws = await newWorkspace();
      const res = await as(ws.apiKey).get('/api/v1/api-limits');
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, { workspaceRequests: 600, apiKeyRequests: 120, windowSeconds: 60 });
      assert.deepEqual(await getApiLimits(env().db, ws.workspaceId), res.body, 'the service function (for the MCP tool) agrees');
    });

    it('saves positive whole numbers up to 2,147,483,646, and the saved settings win', async () => {
      const ws = await newWorkspace();
      const saved = await as(ws.apiKey).put('/api/v1/api-limits', { workspaceRequests: 2_147_483_646, apiKeyRequests: 2_147_483_646 });
      assert.equal(saved.status, 200, JSON.stringify(saved.body));
      assert.deepEqual(saved.body, { workspaceRequests: 2_147_483_646, apiKeyRequests: 2_147_483_646, windowSeconds: 60 });
      assert.deepEqual((await as(ws.apiKey).get('/api/v1/api-limits')).body, saved.body);
      const changed = await as(ws.apiKey).put('/api/v1/api-limits', { workspaceRequests: 1000, apiKeyRequests: 50 });
      assert.equal(changed.status, 200);
      assert.deepEqual((await as(ws.apiKey).get('/api/v1/api-limits')).body, { workspaceRequests: 1000, apiKeyRequests: 50, windowSeconds: 60 });
      // Enforcement uses them too: a fresh key's window shows the saved ceiling.
      const key = await newKey(ws, { scopes: ['org:read'] });
      assertRateHeaders(await as(key).get('/api/v1/organization'), 50, 49);

      // The smallest value is allowed, and takes effect at once (the PUT itself used the one request).
      const tiny = await newWorkspace();
      assert.equal((await as(tiny.apiKey).put('/api/v1/api-limits', { workspaceRequests: 1, apiKeyRequests: 1 })).status, 200);
      assertTooManyRequests(await as(tiny.apiKey).get('/api/v1/api-limits'), 1, 'api_key');
    });

    it('refuses 0, negatives, fractions, strings, 2,147,483,647, missing and unknown fields with 422', async () => {
      const ws = await newWorkspace();
      const bad: unknown[] = [0, -1, 1.5, '10', 2_147_483_647, null, true];
      for (const value of bad) {
        for (const field of ['workspaceRequests', 'apiKeyRequests']) {
          const body = { workspaceRequests: 100, apiKeyRequests: 100, [field]: value };
          const res = await as(ws.apiKey).put('/api/v1/api-limits', body);
          assert.equal(res.status, 422, JSON.stringify(body));
          assert.ok(res.body.errors.some((e: { path: string }) => e.path === `/${field}`), JSON.stringify(res.body));
        }
      }
      for (const body of [{ workspaceRequests: 100 }, { apiKeyRequests: 100 }, {}, { workspaceRequests: 100, apiKeyRequests: 100, windowSeconds: 30 }]) {
        assert.equal((await as(ws.apiKey).put('/api/v1/api-limits', body)).status, 422, JSON.stringify(body));
      }
      assert.deepEqual((await as(ws.apiKey).get('/api/v1/api-limits')).body, { workspaceRequests: 600, apiKeyRequests: 120, windowSeconds: 60 });
    });

    it('needs org:manage', async () => {
      const ws = await newWorkspace();
      const key = await newKey(ws, { scopes: ['org:read', 'projects:write'] });
      assert.equal((await as(key).get('/api/v1/api-limits')).status, 403);
      assert.equal((await as(key).put('/api/v1/api-limits', { workspaceRequests: 1, apiKeyRequests: 1 })).status, 403);
    });

    it('validates in the service function too', async () => {
      const ws = await newWorkspace();
      await assert.rejects(putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 0, apiKeyRequests: 5 }), { code: 'invalid_limit' });
      await assert.rejects(putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 5, apiKeyRequests: 2_147_483_647 }), { code: 'invalid_limit' });
    });
  });

  describe('enforcement', () => {
    beforeEach(holdRequestWindow);

    it('puts X-RateLimit headers on successful responses, counting down', async () => {
      const ws = await newWorkspace();
      const key = await newKey(ws, { scopes: ['org:read', 'projects:read'] });
      assertRateHeaders(await as(key).get('/api/v1/organization'), 120, 119);
      assertRateHeaders(await as(key).get('/api/v1/projects'), 120, 118);
      const refused = await as(key).get('/api/v1/api-keys');
      assert.equal(refused.status, 403);
      assertRateHeaders(refused, 120, 117);
    });

    it('answers 429 with Retry-After and X-RateLimit headers once a key has used its window', async () => {
      const ws = await newWorkspace();
      await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 600, apiKeyRequests: 3 });
      const key = await newKey(ws, { scopes: ['org:read'] });
      for (let remaining = 2; remaining >= 0; remaining--) {
        const res = await as(key).get('/api/v1/organization');
        assert.equal(res.status, 200);
        assertRateHeaders(res, 3, remaining);
      }
      assertTooManyRequests(await as(key).get('/api/v1/organization'), 3, 'api_key');
      // Another key of the workspace has its own bucket.
      assert.equal((await as(ws.apiKey).get('/api/v1/organization')).status, 200);
    });

    it('keeps the window’s usage when a limit changes', async () => {
      const ws = await newWorkspace();
      const key = await newKey(ws, { scopes: ['org:read'] });
      for (let i = 0; i < 4; i++) assert.equal((await as(key).get('/api/v1/organization')).status, 200);

      // Raise the ceiling: the 4 requests already made still count.
      assert.equal((await as(ws.apiKey).put('/api/v1/api-limits', { workspaceRequests: 600, apiKeyRequests: 200 })).status, 200);
      assertRateHeaders(await as(key).get('/api/v1/organization'), 200, 195);

      // Lower it below the usage: the next request is over the limit at once, not after a fresh window.
      assert.equal((await as(ws.apiKey).put('/api/v1/api-limits', { workspaceRequests: 600, apiKeyRequests: 6 })).status, 200);
      assertRateHeaders(await as(key).get('/api/v1/organization'), 6, 0);
      assertTooManyRequests(await as(key).get('/api/v1/organization'), 6, 'api_key');
    });

    it('shares the workspace bucket between keys: more keys do not bypass it', async () => {
      const ws = await newWorkspace();
      await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 4, apiKeyRequests: 100 });
      const [a, b, c] = [await newKey(ws, { scopes: ['org:read'] }), await newKey(ws, { scopes: ['org:read'] }), await newKey(ws, { scopes: ['org:read'] })];
      assertRateHeaders(await as(a).get('/api/v1/organization'), 4, 3);
      assertRateHeaders(await as(b).get('/api/v1/organization'), 4, 2);
      assertRateHeaders(await as(a).get('/api/v1/organization'), 4, 1);
      assertRateHeaders(await as(c).get('/api/v1/organization'), 4, 0);
      for (const key of [a, b, c, ws.apiKey]) assertTooManyRequests(await as(key).get('/api/v1/organization'), 4, 'workspace');
      // Another workspace is unaffected.
      const other = await newWorkspace();
      assert.equal((await as(other.apiKey).get('/api/v1/organization')).status, 200);
    });

    it('counts afresh once the window turns, counted one by one or from a lease: the test clock moves the database’s time', async () => {
      const ws = await newWorkspace();
      await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 200_000, apiKeyRequests: 2 });
      const small = await newKey(ws, { scopes: ['org:read'] });
      for (let remaining = 1; remaining >= 0; remaining--) assertRateHeaders(await as(small).get('/api/v1/organization'), 2, remaining);
      assertTooManyRequests(await as(small).get('/api/v1/organization'), 2, 'api_key');
      const roomy = await newWorkspace();
      await putApiLimits(env(), env().db, roomy.workspaceId, { workspaceRequests: 200_000, apiKeyRequests: 100_000 });
      const leased = await newKey(roomy, { scopes: ['org:read'] });
      // The first request checks the key, the next ones spend a lease of it.
      for (let remaining = 99_999; remaining >= 99_997; remaining--) assertRateHeaders(await as(leased).get('/api/v1/organization'), 100_000, remaining);

      env().clock.advance(WINDOW_SECONDS * 1000);
      assertRateHeaders(await as(small).get('/api/v1/organization'), 2, 1);
      assertRateHeaders(await as(leased).get('/api/v1/organization'), 100_000, 99_999);
    });

    it('does not charge a key for requests the workspace bucket refused', async () => {
      const ws = await newWorkspace();
      await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 2, apiKeyRequests: 100 });
      const key = await newKey(ws, { scopes: ['org:read'] });
      assert.equal((await as(key).get('/api/v1/organization')).status, 200);
      assert.equal((await as(key).get('/api/v1/organization')).status, 200);
      for (let i = 0; i < 3; i++) assert.equal((await as(key).get('/api/v1/organization')).status, 429);
      await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 1000, apiKeyRequests: 100 });
      assertRateHeaders(await as(key).get('/api/v1/organization'), 100, 97);
    });
  });

  describe('across API processes', function () {
    // The second API is a real separate process (`scripts/start.ts api`) on the same database,
    // which keeps the time the test clock holds (WEFT_TEST_CLOCK_FILE): each test holds the window.
    this.timeout(120_000);
    const second = anotherApi();
    beforeEach(() => holdRequestWindow());

    /** Fires the requests all at once, alternating between the shared test API and the second process. */
    async function fireConcurrently(keys: string[], count: number): Promise<HttpResponse[]> {
      const urls = [env().baseUrl, second.url];
      return Promise.all(Array.from({ length: count }, (_, i) => requestAt(urls[i % 2], 'GET', '/api/v1/organization', { key: keys[i % keys.length] })));
    }

    it('with apiKeyRequests N, N+1 concurrent requests over two processes give exactly N successes and one 429', async () => {
      const n = 12;
      const ws = await newWorkspace();
      assert.equal((await as(ws.apiKey).put('/api/v1/api-limits', { workspaceRequests: 600, apiKeyRequests: n })).status, 200);
      const key = await newKey(ws, { scopes: ['org:read'] });
      const answers = await fireConcurrently([key], n + 1);
      const ok = answers.filter((r) => r.status === 200);
      const refused = answers.filter((r) => r.status === 429);
      assert.equal(ok.length, n, answers.map((r) => r.status).join(','));
      assert.equal(refused.length, 1);
      assertTooManyRequests(refused[0], n, 'api_key');
      assert.deepEqual(ok.map((r) => rateHeaders(r).remaining).sort((x, y) => x - y), Array.from({ length: n }, (_, i) => i), 'each success saw its own count');
    });

    it('with workspaceRequests N, N+1 concurrent requests from two keys over two processes give exactly N successes and one 429', async () => {
      const n = 10;
      const ws = await newWorkspace();
      await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: n, apiKeyRequests: 100 });
      const keys = [await newKey(ws, { scopes: ['org:read'] }), await newKey(ws, { scopes: ['org:read'] })];
      const answers = await fireConcurrently(keys, n + 1);
      assert.equal(answers.filter((r) => r.status === 200).length, n, answers.map((r) => r.status).join(','));
      const refused = answers.filter((r) => r.status === 429);
      assert.equal(refused.length, 1);
      assertTooManyRequests(refused[0], n, 'workspace');
      // Both processes now refuse the workspace.
      for (const url of [env().baseUrl, second.url]) assert.equal((await requestAt(url, 'GET', '/api/v1/organization', { key: ws.apiKey })).status, 429);
    });
  });
});

describe('Request leases while a key pauses', function () {
  // A process hands a key's unused request lease back after 2 s without use (or WEFT_LEASE_IDLE_MS,
  // if shorter), so a client pausing briefly between bursts keeps it; leased requests count as used.
  this.timeout(120_000);
  const quick = anotherApi({ WEFT_LEASE_IDLE_MS: '300' });

  const usedBy = async (keyId: string) => Number((await env().db('request_counters').where({ bucket: `k:${keyId}` }).first('used'))?.used ?? 0);

  /**
   * Requests of a new key with room to lease, until its bucket counts more than were sent (a lease):
   * how many were sent and what the bucket counts. A process leases only for a key it keeps, and it
   * keeps keys only once its definition cache listens, which a fresh process's first request starts:
   * how many requests that takes depends on when the LISTEN is confirmed.
   */
  async function burst(baseUrl: string): Promise<{ keyId: string; sent: number; used: number }> {
    const ws = await newWorkspace();
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 100_000, apiKeyRequests: 100_000 });
    const key = await newKey(ws, { scopes: ['org:read'] });
    const keyId = await keyIdOf(key);
    let sent = 0;
    let used = 0;
    while (used <= sent) {
      assert.ok(sent < 20, `no lease after ${sent} requests (the bucket counts ${used})`);
      assert.equal((await requestAt(baseUrl, 'GET', '/api/v1/organization', { key })).status, 200);
      sent += 1;
      used = await usedBy(keyId);
    }
    return { keyId, sent, used };
  }

  it('keeps a lease through a pause shorter than the idle time (2 s by default)', async () => {
    // The in-process API's clock, held: its idle sweep sees only the pause the test makes.
    holdRequestWindow();
    const { keyId, used } = await burst(env().baseUrl);
    env().clock.advance(1000);
    await env().apiDependencies.requests.budgets.sweep();
    assert.equal(await usedBy(keyId), used, 'the lease is still held after a 1 s pause');
  });

  it('hands an idle lease back after WEFT_LEASE_IDLE_MS', async () => {
    // A lease of a 60-second window that turns before it is handed back has nothing to give back
    // (the next window starts from zero), and the key's row keeps the old count: the window is
    // held (its own process keeps the test clock's time too), and the clock moved past the idle time.
    holdRequestWindow();
    const { keyId, sent } = await burst(quick.url);
    env().clock.advance(1_000);
    await settled('the unused lease to go back (the bucket to count only what was sent)', () => usedBy(keyId), (used) => used === sent, 30_000, 100);
  });
});

describe('Request authentication in batches', () => {
  // authenticateRequest sends the requests that arrive while a batch is in flight together, in one
  // statement. A second pool stands in for a second API process: batches of both lock counter rows
  // in one global order, so they never wait on each other in a cycle.
  it('counts a concurrent burst over several keys and workspaces exactly, two pools at once, bad keys uncounted', async function () {
    this.timeout(60_000);
    const tight = await newWorkspace();
    const roomy = await newWorkspace();
    await putApiLimits(env(), env().db, tight.workspaceId, { workspaceRequests: 25, apiKeyRequests: 10 });
    await putApiLimits(env(), env().db, roomy.workspaceId, { workspaceRequests: 1000, apiKeyRequests: 7 });
    const keys = [
      ...(await Promise.all([1, 2, 3].map(() => newKey(tight, { scopes: ['org:read'] })))),
      ...(await Promise.all([1, 2].map(() => newKey(roomy, { scopes: ['org:read'] })))),
    ];
    const wrongSecret = (key: string) => key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A');
    const second = createDb(process.env.DATABASE_URL!, { max: 10 });
    const { clock } = env();
    let batchStatements = 0;
    second.on('query', (query: { sql: string }) => void (query.sql.includes('weft_authenticate_requests') && batchStatements++));
    // Each pool counts as a runtime of its own: its own request budgets, batches and kept keys.
    const countings = new Map([env().db, second].map((db) => {
      const definitions = new DefinitionCache(db, clock);
      return [db, { db, clock, definitions, requests: new RequestAdmission(db, clock, definitions) }];
    }));
    try {
      // Inside one 60-second window: both pools count by the test clock, held still.
      holdRequestWindow();
      const calls: Array<{ db: typeof second; key: string; real: boolean }> = [];
      for (let round = 0; round < 15; round++) {
        for (const [i, key] of keys.entries()) calls.push({ db: (round + i) % 2 ? env().db : second, key, real: true });
        if (round % 3 === 0) calls.push({ db: second, key: wrongSecret(keys[round % keys.length]), real: false });
      }
      const outcomes = await Promise.all(
        calls.map(({ db, key }) => authenticateRequest(countings.get(db)!, key).then(
          (authenticated) => ({ key, workspaceId: authenticated.principal.workspaceId, code: 'ok' }),
          (error: { code?: string; details?: { dimension?: string } }) => ({ key, workspaceId: undefined, code: `${error.code}${error.details?.dimension ? `:${error.details.dimension}` : ''}` }),
        )),
      );
      const admitted = (key: string) => outcomes.filter((o) => o.key === key && o.code === 'ok').length;
      const inTight = keys.slice(0, 3).map(admitted);
      assert.equal(inTight.reduce((a, b) => a + b, 0), 25, `the tight workspace admits exactly its 25 (per key ${inTight.join(', ')})`);
      assert.ok(inTight.every((n) => n <= 10), 'no key passes its 10');
      assert.deepEqual(keys.slice(3).map(admitted), [7, 7], 'each roomy key admits exactly its 7');
      assert.ok(outcomes.filter((o) => !calls.find((c) => c.key === o.key)!.real).every((o) => o.code === 'invalid_credential'), 'wrong secrets are refused');
      assert.equal(outcomes.filter((o) => o.code.startsWith('rate_limited')).length, 45 - 25 + 30 - 14, 'every other real request is refused as rate limited');
      assert.ok(batchStatements > 0 && batchStatements < calls.filter((c) => c.db === second).length, `the second pool batched: ${batchStatements} statements`);

      // The counters hold what was admitted, with refused requests given back, not a request more.
      const window = Math.floor(clock.now() / 60_000);
      const { rows } = await env().db.raw('SELECT bucket, used FROM request_counters WHERE window_start = ? AND bucket = ANY(?::text[])', [
        window, [`w:${tight.workspaceId}`, `w:${roomy.workspaceId}`, ...(await Promise.all(keys.map(async (key) => `k:${await keyIdOf(key)}`)))],
      ]);
      const used = Object.fromEntries(rows.map((row: { bucket: string; used: number }) => [row.bucket, row.used]));
      assert.equal(used[`w:${tight.workspaceId}`], 25);
      assert.equal(used[`w:${roomy.workspaceId}`], 14);
      for (const [i, key] of keys.entries()) assert.equal(used[`k:${await keyIdOf(key)}`], i < 3 ? inTight[i] : 7, `key ${i}`);
    } finally {
      for (const { requests, definitions } of countings.values()) {
        await requests.close();
        await definitions.close();
      }
      await second.destroy();
    }
  });
});

describe('Request counters across a window turn', () => {
  it('never move a bucket back to an older window: a late request counts in the newer one', async () => {
    const ws = await newWorkspace();
    const key = await newKey(ws, { scopes: ['org:read'] });
    const bucket = `k:${await keyIdOf(key)}`;
    // As if a request that read the clock later had already moved the key's bucket to the next window.
    const next = Math.floor(Date.now() / 60_000) + 1;
    await env().db('request_counters').insert({ bucket, windowStart: next, used: 5 });
    await authenticateRequest(env().dependencies(), key);
    const row = await env().db('request_counters').where({ bucket }).first();
    assert.deepEqual({ windowStart: Number(row.windowStart), used: row.used }, { windowStart: next, used: 6 });
  });
});
