import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { env } from '../support/environment';
import { holdRequestWindow, keyIdOf, newKey, newWorkspace, raiseRequestLimits, requestAt } from '../support/fixtures';
import { runAdmin } from '../support/processes';
import { putApiLimits } from '../../services/tenancy/api-limits';
import { burst, useApiProcesses } from './support/concurrency-processes';

/**
 * API processes keep keys they have authenticated and spend leased request budgets
 * (services/tenancy/request-authentication.ts, request-budgets.ts). Three processes on one
 * database: a revocation, an expiry and a member's removal reach every one of them within one
 * second, and a bucket large enough to be leased in shares still admits exactly its limit.
 */

const PROPAGATION_MS = 1_000;

/** Asks each process until `refused` holds for its answer; returns how long each took after `since`. */
async function untilEveryProcess(urls: string[], since: number, ask: (url: string) => Promise<{ status: number; body: { code?: string } }>, refused: (answer: { status: number; body: { code?: string } }) => boolean): Promise<number[]> {
  return Promise.all(urls.map(async (url) => {
    for (;;) {
      const answer = await ask(url);
      if (refused(answer)) return Date.now() - since;
      if (Date.now() - since > 5 * PROPAGATION_MS) throw new Error(`${url} still answers ${answer.status} ${answer.body.code ?? ''} after ${Date.now() - since} ms`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }));
}

describe('Kept keys and leased budgets across three API processes', function () {
  this.timeout(600_000);
  const processes = useApiProcesses(2);

  /** A workspace whose buckets are leased in shares (the polling below would spend the default ones). */
  async function leasedWorkspace() {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    return ws;
  }

  /** Every process has authenticated `key` (and keeps it): two requests each. */
  async function warm(key: string, path = '/api/v1/organization'): Promise<void> {
    for (const url of processes.urls) for (let i = 0; i < 2; i++) assert.equal((await requestAt(url, 'GET', path, { key })).status, 200);
  }

  it('a key revoked in one process is refused by all three within one second', async () => {
    const ws = await leasedWorkspace();
    const key = await newKey(ws, { scopes: ['org:read'] });
    await warm(key);
    const revoked = await requestAt(processes.urls[1], 'DELETE', `/api/v1/api-keys/${await keyIdOf(key)}`, { key: ws.apiKey });
    assert.ok(revoked.status < 300, JSON.stringify(revoked.body));
    const since = Date.now();
    const took = await untilEveryProcess(processes.urls, since, (url) => requestAt(url, 'GET', '/api/v1/organization', { key }), (answer) => answer.status === 401 && answer.body.code === 'invalid_credential');
    assert.ok(Math.max(...took) <= PROPAGATION_MS, `refused after ${took.join(', ')} ms`);
  });

  it('a kept key is refused everywhere once its expiry passes, and an expiry moved earlier in the database reaches all three within one second', async () => {
    const ws = await leasedWorkspace();
    // Far enough ahead that warming every process surely finishes first on a loaded machine.
    const expiresAt = new Date(Date.now() + 10_000);
    const expiring = await newKey(ws, { scopes: ['org:read'], expiresAt: expiresAt.toISOString() });
    await warm(expiring);
    const lateBy = await untilEveryProcess(processes.urls, expiresAt.getTime(), (url) => requestAt(url, 'GET', '/api/v1/organization', { key: expiring }), (answer) => answer.status === 401 && answer.body.code === 'credential_expired');
    assert.ok(Math.max(...lateBy) <= PROPAGATION_MS, `expired keys answered for ${lateBy.join(', ')} ms past their expiry`);

    // Another writer (this test's own pool stands in for any process) moves an expiry to the past.
    const kept = await newKey(ws, { scopes: ['org:read'], expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    await warm(kept);
    await env().db('api_keys').where({ id: await keyIdOf(kept) }).update({ expiresAt: env().db.raw("now() - interval '1 second'") });
    const since = Date.now();
    // Process 0 is this test's own API: only the other two depend on the notification here, and all three must refuse.
    const took = await untilEveryProcess(processes.urls, since, (url) => requestAt(url, 'GET', '/api/v1/organization', { key: kept }), (answer) => answer.status === 401 && answer.body.code === 'credential_expired');
    assert.ok(Math.max(...took) <= PROPAGATION_MS, `refused after ${took.join(', ')} ms`);
  });

  it('a member removed by the operator CLI (a fourth process) loses what needs an accountable member in all three within one second', async () => {
    const ws = await leasedWorkspace();
    const [member] = await env().db('members').insert({ workspaceId: ws.workspaceId, name: `leaving-${randomUUID().slice(0, 6)}`, role: 'admin' }).returning('id');
    // Listing runs needs an active owner or admin behind the key.
    const key = await newKey(ws, { scopes: ['runs:read'] }, member.id);
    await warm(key, '/api/v1/runs');
    const removed = await runAdmin(['member', 'remove', '--workspace', ws.workspaceId, '--member', member.id]);
    assert.equal(removed.code, 0, removed.stderr);
    const since = Date.now();
    const took = await untilEveryProcess(processes.urls, since, (url) => requestAt(url, 'GET', '/api/v1/runs', { key }), (answer) => answer.status === 403 && answer.body.code === 'actor_not_accountable');
    assert.ok(Math.max(...took) <= PROPAGATION_MS, `refused after ${took.join(', ')} ms`);
  });

  it('a bucket leased in shares never admits more than its limit over three processes, and what a process leaves unused goes back', async () => {
    const limit = 1_000;
    const ws = await newWorkspace();
    await putApiLimits(env(), env().db, ws.workspaceId, { workspaceRequests: 100 * limit, apiKeyRequests: limit });
    const key = await newKey(ws, { scopes: ['org:read'] });
    const keyId = await keyIdOf(key);
    const counted = async () => Number((await env().db('request_counters').where({ bucket: `k:${keyId}` }).first('used'))?.used ?? 0);
    // All three keep the time the test's clock holds (the other two through WEFT_TEST_CLOCK_FILE): one window throughout.
    holdRequestWindow();
    const answers = await burst(3 * limit, (i) => requestAt(processes.urls[i % processes.urls.length], 'GET', '/api/v1/organization', { key }));
    const admitted = answers.filter((answer) => answer.status === 200).length;
    assert.ok(admitted <= limit, `admitted ${admitted} of a limit of ${limit}`);
    assert.equal(answers.filter((answer) => answer.status === 429).length, 3 * limit - admitted, 'every other answer is a 429');
    // A lease a process took and did not spend was counted; idle for 2 s (the clock moved past
    // them), it goes back at the next sweep: waited for up to 10 s, since processes just out of a
    // burst run their timers late.
    env().clock.advance(2_500);
    const since = Date.now();
    while ((await counted()) !== admitted) {
      assert.ok(Date.now() - since < 10_000, `the key bucket still counts ${await counted()} for ${admitted} admitted`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Then the rest of the window's budget is there to spend, one by one, and no more.
    let more = 0;
    for (let i = 0; more + admitted < limit + 1 && i < limit; i++) {
      const res = await requestAt(processes.urls[i % processes.urls.length], 'GET', '/api/v1/organization', { key });
      if (res.status !== 200) break;
      more += 1;
    }
    assert.equal(admitted + more, limit, `${admitted} in the burst, ${more} after it`);
  });
});
