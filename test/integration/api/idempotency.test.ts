import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { env } from '../../support/environment';
import { as, newKey, newWorkspace } from '../../support/fixtures';

const projectCount = async (workspaceId: string, name?: string): Promise<number> => {
  const query = env().db('projects').where({ workspaceId });
  if (name) query.where({ name });
  const [{ count }] = await query.count({ count: '*' });
  return Number(count);
};

const idempotencyRecords = async (workspaceId: string): Promise<number> => {
  const [{ count }] = await env().db('idempotency_records').where({ workspaceId }).count({ count: '*' });
  return Number(count);
};

describe('Idempotency-Key on POST /api/v1/projects', () => {
  it('executes 20 concurrent identical requests once, and answers all with the same status and body', async () => {
    const ws = await newWorkspace();
    const headers = { 'Idempotency-Key': `create-${randomUUID()}` };
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => as(ws.apiKey).post('/api/v1/projects', { name: 'once', description: 'made by 20 requests' }, { headers })),
    );
    assert.deepEqual(answers.map((r) => r.status), Array(20).fill(201), JSON.stringify(answers.filter((r) => r.status !== 201).map((r) => r.body)));
    for (const res of answers) assert.deepEqual(res.body, answers[0].body);
    assert.equal(await projectCount(ws.workspaceId, 'once'), 1);
    assert.equal(answers.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 19, 'all but the first are replays');
  });

  it('replays the stored answer to a retry, marked Idempotent-Replayed: true', async () => {
    const ws = await newWorkspace();
    const headers = { 'Idempotency-Key': 'retry-me-please' };
    const first = await as(ws.apiKey).post('/api/v1/projects', { name: 'retried' }, { headers });
    assert.equal(first.status, 201);
    assert.equal(first.headers.get('idempotent-replayed'), null);
    // The project changes in between: the replay still answers what the first request answered.
    await as(ws.apiKey).patch(`/api/v1/projects/${first.body.project.id}`, { description: 'edited later' });
    const retry = await as(ws.apiKey).post('/api/v1/projects', { name: 'retried' }, { headers });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers.get('idempotent-replayed'), 'true');
    assert.deepEqual(retry.body, first.body);
    assert.equal(await projectCount(ws.workspaceId, 'retried'), 1);
  });

  it('treats the same payload with keys in another order as the same request', async () => {
    const ws = await newWorkspace();
    const headers = { 'Idempotency-Key': 'reordered-json', 'Content-Type': 'application/json' };
    const first = await as(ws.apiKey).post('/api/v1/projects', undefined, { headers, rawBody: '{"name":"ordered","description":"d"}', key: ws.apiKey });
    const second = await as(ws.apiKey).post('/api/v1/projects', undefined, { headers, rawBody: '{"description":"d","name":"ordered"}', key: ws.apiKey });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal(second.status, 201, JSON.stringify(second.body));
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
  });

  it('refuses the same key with a different payload (422 idempotency_key_reused) and executes nothing', async () => {
    const ws = await newWorkspace();
    const headers = { 'Idempotency-Key': 'one-operation' };
    assert.equal((await as(ws.apiKey).post('/api/v1/projects', { name: 'first' }, { headers })).status, 201);
    const reused = await as(ws.apiKey).post('/api/v1/projects', { name: 'second' }, { headers });
    assert.equal(reused.status, 422);
    assert.equal(reused.body.code, 'idempotency_key_reused');
    assert.match(reused.body.message, /new key/);
    assert.equal(await projectCount(ws.workspaceId, 'second'), 0);
  });

  it('scopes keys to the API key: another key may use the same Idempotency-Key independently', async () => {
    const ws = await newWorkspace();
    const other = await newKey(ws, { scopes: ['projects:write'] });
    const headers = { 'Idempotency-Key': 'shared-by-accident' };
    const mine = await as(ws.apiKey).post('/api/v1/projects', { name: 'mine' }, { headers });
    const theirs = await as(other).post('/api/v1/projects', { name: 'theirs' }, { headers });
    assert.equal(mine.status, 201);
    assert.equal(theirs.status, 201, JSON.stringify(theirs.body));
    assert.equal(theirs.headers.get('idempotent-replayed'), null);
    assert.notEqual(theirs.body.project.id, mine.body.project.id);
    // The same payload from the other key executes too, rather than replaying someone else's answer.
    const again = await as(other).post('/api/v1/projects', { name: 'mine' }, { headers: { 'Idempotency-Key': 'fresh-for-other' } });
    assert.equal(again.status, 409, 'it really ran: the name is taken');
  });

  it('scopes keys to the workspace', async () => {
    const [a, b] = [await newWorkspace(), await newWorkspace()];
    const headers = { 'Idempotency-Key': 'same-in-two-workspaces' };
    const first = await as(a.apiKey).post('/api/v1/projects', { name: 'twin' }, { headers });
    const second = await as(b.apiKey).post('/api/v1/projects', { name: 'twin' }, { headers });
    assert.equal(first.status, 201);
    assert.equal(second.status, 201);
    assert.equal(second.headers.get('idempotent-replayed'), null);
    assert.notEqual(first.body.project.id, second.body.project.id);
  });

  it('does not store a request that failed validation: a corrected retry with the same key succeeds', async () => {
    const ws = await newWorkspace();
    const headers = { 'Idempotency-Key': 'fix-and-retry' };
    const invalid = await as(ws.apiKey).post('/api/v1/projects', { name: '' }, { headers });
    assert.equal(invalid.status, 422);
    assert.equal(await idempotencyRecords(ws.workspaceId), 0);
    const valid = await as(ws.apiKey).post('/api/v1/projects', { name: 'corrected' }, { headers });
    assert.equal(valid.status, 201, JSON.stringify(valid.body));
    assert.equal(valid.headers.get('idempotent-replayed'), null);
    assert.equal(await idempotencyRecords(ws.workspaceId), 1);
  });

  it('does not store a request that failed in its handler: a retry runs again', async () => {
    const ws = await newWorkspace();
    assert.equal((await as(ws.apiKey).post('/api/v1/projects', { name: 'taken' })).status, 201);
    const headers = { 'Idempotency-Key': 'conflict-then-retry' };
    const conflict = await as(ws.apiKey).post('/api/v1/projects', { name: 'taken' }, { headers });
    assert.equal(conflict.status, 409);
    assert.equal(await idempotencyRecords(ws.workspaceId), 0);
    // The blocking project is renamed; the same request with the same key now succeeds.
    const existing = await env().db('projects').where({ workspaceId: ws.workspaceId, name: 'taken' }).first();
    await as(ws.apiKey).patch(`/api/v1/projects/${existing.id}`, { name: 'renamed' });
    const retry = await as(ws.apiKey).post('/api/v1/projects', { name: 'taken' }, { headers });
    assert.equal(retry.status, 201, JSON.stringify(retry.body));
  });

  it('refuses an Idempotency-Key that is too short, too long or not visible ASCII (422) and executes nothing', async () => {
    const ws = await newWorkspace();
    for (const value of ['short', 'x'.repeat(201), 'has space in it', 'ünïcödé-key']) {
      const res = await as(ws.apiKey).post('/api/v1/projects', { name: `bad-${value.length}` }, { headers: { 'Idempotency-Key': value } }).catch((e: Error) => e);
      if (res instanceof Error) continue; // fetch refuses non-ASCII header values itself
      assert.equal(res.status, 422, value);
      assert.equal(res.body.code, 'invalid_idempotency_key');
    }
    assert.equal(await projectCount(ws.workspaceId), 1);
    assert.equal((await as(ws.apiKey).post('/api/v1/projects', { name: 'ok' }, { headers: { 'Idempotency-Key': '12345678' } })).status, 201, '8 characters are enough');
  });

  it('keeps records for at least 24 hours', async () => {
    const ws = await newWorkspace();
    await as(ws.apiKey).post('/api/v1/projects', { name: 'kept' }, { headers: { 'Idempotency-Key': 'kept-for-a-day' } });
    const row = await env().db('idempotency_records').where({ workspaceId: ws.workspaceId }).first();
    assert.ok(row.expiresAt.getTime() - row.createdAt.getTime() >= 24 * 3600_000);
  });

  it('works without the header: each request runs', async () => {
    const ws = await newWorkspace();
    assert.equal((await as(ws.apiKey).post('/api/v1/projects', { name: 'plain' })).status, 201);
    assert.equal((await as(ws.apiKey).post('/api/v1/projects', { name: 'plain' })).status, 409);
    assert.equal(await idempotencyRecords(ws.workspaceId), 0);
  });
});
