import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { startApi } from '../../../scripts/runtime';
import { createProject } from '../../../services/tenancy/projects';
import { addMember, removeMember } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { as, keyIdOf, newKey, newWorkspace, requestAt } from '../../support/fixtures';

const SECRET_FORMAT = /^weft_sk_[A-Za-z0-9]{12}_[A-Za-z0-9_-]{43}$/;

describe('API keys', () => {
  describe('POST /api/v1/api-keys', () => {
    it('creates a key whose secret is shown once, recognisable and working', async () => {
      const ws = await newWorkspace();
      const res = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'reader', scopes: ['org:read', 'projects:read'], readPermissions: ['sales.read'] });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const { key } = res.body;
      assert.match(key.secret, SECRET_FORMAT);
      assert.ok(key.secret.startsWith(key.prefix), 'the prefix is the public start of the secret');
      assert.equal(key.name, 'reader');
      assert.deepEqual(key.scopes, ['org:read', 'projects:read']);
      assert.deepEqual(key.readPermissions, ['sales.read']);
      assert.deepEqual(key.projectIds, []);
      assert.equal(key.workspaceResources, false);
      assert.equal(key.expiresAt, null);
      assert.equal(key.lastUsedAt, null);
      assert.equal(key.createdByMemberId, ws.memberId);

      const org = await as(key.secret).get('/api/v1/organization');
      assert.equal(org.status, 200);
      assert.equal(org.body.organization.id, ws.workspaceId);
    });

    it('stores only a hash: the secret cannot be recovered from the database or the listing', async () => {
      const ws = await newWorkspace();
      const { body } = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'hidden', scopes: ['org:read'] });
      const secret: string = body.key.secret;
      const row = await env().db('api_keys').where({ id: body.key.id }).first();
      assert.ok(!JSON.stringify(row).includes(secret), 'the raw secret is stored');
      assert.equal(row.secretHash, createHash('sha256').update(secret).digest('hex'));

      const list = await as(ws.apiKey).get('/api/v1/api-keys');
      assert.equal(list.status, 200);
      const text = JSON.stringify(list.body);
      assert.ok(!text.includes(secret) && !text.includes(row.secretHash), 'the listing exposes the secret or its hash');
      const listed = list.body.keys.find((k: { id: string }) => k.id === body.key.id);
      assert.ok(listed);
      assert.equal(listed.secret, undefined);
      assert.equal(listed.secretHash, undefined);
      assert.equal(listed.prefix, body.key.prefix);
      for (const field of ['id', 'prefix', 'scopes', 'readPermissions', 'projectIds', 'workspaceResources', 'expiresAt', 'lastUsedAt']) {
        assert.ok(field in listed, `the listing lacks ${field}`);
      }
    });

    it('gives every key a different secret', async () => {
      const ws = await newWorkspace();
      const secrets = await Promise.all([1, 2, 3].map(async (n) => (await as(ws.apiKey).post('/api/v1/api-keys', { name: `k${n}`, scopes: ['org:read'] })).body.key.secret as string));
      assert.equal(new Set(secrets).size, 3);
      assert.equal(new Set(secrets.map((s) => s.slice(0, 20))).size, 3);
    });

    it('has no idempotency contract: a retry creates another key', async () => {
      const ws = await newWorkspace();
      const headers = { 'Idempotency-Key': 'same-key-twice' };
      const first = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'retry', scopes: ['org:read'] }, { headers });
      const second = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'retry', scopes: ['org:read'] }, { headers });
      assert.equal(first.status, 201);
      assert.equal(second.status, 201);
      assert.notEqual(first.body.key.id, second.body.key.id);
    });

    it('accepts a project allowlist and a future expiry', async () => {
      const ws = await newWorkspace();
      const expiresAt = new Date(Date.now() + 3600_000).toISOString();
      const res = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'scoped', scopes: ['projects:read'], projectIds: [ws.projectId], workspaceResources: true, expiresAt });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.deepEqual(res.body.key.projectIds, [ws.projectId]);
      assert.equal(res.body.key.workspaceResources, true);
      assert.equal(res.body.key.expiresAt, expiresAt);
    });

    it('rejects an unknown scope with 422', async () => {
      const ws = await newWorkspace();
      const res = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'bad', scopes: ['org:read', 'everything:all'] });
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'validation_failed');
      assert.ok(res.body.errors.some((e: { path: string }) => e.path === '/scopes/1'), JSON.stringify(res.body.errors));
    });

    it('rejects org:manage with a project restriction (422 manage_key_restricted)', async () => {
      const ws = await newWorkspace();
      const res = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'admin', scopes: ['org:manage'], projectIds: [ws.projectId] });
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'manage_key_restricted');
    });

    it('rejects projectIds that are not projects of the workspace (422 unknown_project)', async () => {
      const ws = await newWorkspace();
      const other = await newWorkspace();
      for (const projectId of [other.projectId, randomUUID()]) {
        const res = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'x', scopes: ['projects:read'], projectIds: [ws.projectId, projectId] });
        assert.equal(res.status, 422);
        assert.equal(res.body.code, 'unknown_project');
        assert.equal(res.body.errors[0].path, '/projectIds/1');
        assert.ok(!JSON.stringify(res.body).includes(other.workspaceId));
      }
    });

    it('rejects an expiry in the past, a malformed one, and unknown fields with 422', async () => {
      const ws = await newWorkspace();
      const cases: Array<[unknown, string]> = [
        [{ name: 'x', scopes: ['org:read'], expiresAt: new Date(Date.now() - 60_000).toISOString() }, 'expiry_in_past'],
        [{ name: 'x', scopes: ['org:read'], expiresAt: 'tomorrow' }, 'validation_failed'],
        [{ name: 'x', scopes: [] }, 'validation_failed'],
        [{ scopes: ['org:read'] }, 'validation_failed'],
        [{ name: 'x', scopes: ['org:read'], secret: 'chosen' }, 'validation_failed'],
      ];
      for (const [body, code] of cases) {
        const res = await as(ws.apiKey).post('/api/v1/api-keys', body);
        assert.equal(res.status, 422, JSON.stringify(body));
        assert.equal(res.body.code, code, JSON.stringify(res.body));
      }
      const list = await as(ws.apiKey).get('/api/v1/api-keys');
      assert.equal(list.body.keys.length, 1, 'a refused creation stored a key');
    });

    it('is refused to project-restricted keys and keys without org:manage (403)', async () => {
      const ws = await newWorkspace();
      const restricted = await newKey(ws, { scopes: ['projects:write', 'org:read'], projectIds: [ws.projectId] });
      const res = await as(restricted).post('/api/v1/api-keys', { name: 'escalate', scopes: ['org:manage'] });
      assert.equal(res.status, 403);
      assert.equal(res.body.code, 'insufficient_scope');

      // org:manage cannot be restricted through the API; should such a key exist, it still cannot create keys.
      const manager = await newKey(ws, { scopes: ['org:manage'] });
      await env().db('api_keys').where({ id: await keyIdOf(manager) }).update({ projectIds: env().db.raw('ARRAY[?]::uuid[]', [ws.projectId]) });
      const forced = await as(manager).post('/api/v1/api-keys', { name: 'escalate', scopes: ['org:read'] });
      assert.equal(forced.status, 403);
      assert.equal(forced.body.code, 'restricted_key');
      assert.equal((await as(ws.apiKey).get('/api/v1/api-keys')).body.keys.length, 3);
    });
  });

  describe('PATCH /api/v1/api-keys/{key_id}', () => {
    it('changes projectIds, workspaceResources and readPermissions, which then take effect', async () => {
      const ws = await newWorkspace();
      const second = await createProject(env().db, ws.workspaceId, { name: 'second' });
      const created = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'editable', scopes: ['projects:read'] });
      const { id, secret } = created.body.key;
      assert.equal((await as(secret).get('/api/v1/projects')).body.projects.length, 2);

      const res = await as(ws.apiKey).patch(`/api/v1/api-keys/${id}`, { projectIds: [second.id], workspaceResources: true, readPermissions: ['finance.read'] });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.key.projectIds, [second.id]);
      assert.equal(res.body.key.workspaceResources, true);
      assert.deepEqual(res.body.key.readPermissions, ['finance.read']);
      assert.equal(res.body.key.name, 'editable');
      assert.equal(res.body.key.secret, undefined);

      const visible = await as(secret).get('/api/v1/projects');
      assert.deepEqual(visible.body.projects.map((p: { id: string }) => p.id), [second.id]);
      assert.equal((await as(secret).get(`/api/v1/projects/${ws.projectId}`)).status, 403);

      const cleared = await as(ws.apiKey).patch(`/api/v1/api-keys/${id}`, { projectIds: [] });
      assert.deepEqual(cleared.body.key.projectIds, []);
      assert.deepEqual(cleared.body.key.readPermissions, ['finance.read'], 'fields left out of a PATCH are kept');
      assert.equal((await as(secret).get('/api/v1/projects')).body.projects.length, 2);
    });

    it('refuses name, scopes and expiresAt with a 422 that says to create a new key', async () => {
      const ws = await newWorkspace();
      const id = await keyIdOf(await newKey(ws, { scopes: ['org:read'] }));
      for (const body of [{ name: 'renamed' }, { scopes: ['org:manage'] }, { expiresAt: new Date(Date.now() + 60_000).toISOString() }, { projectIds: [], name: 'x' }]) {
        const res = await as(ws.apiKey).patch(`/api/v1/api-keys/${id}`, body);
        assert.equal(res.status, 422, JSON.stringify(body));
        assert.match(res.body.message, /create a new key/i);
      }
      const row = await env().db('api_keys').where({ id }).first();
      assert.deepEqual(row.scopes, ['org:read']);
      assert.notEqual(row.name, 'renamed');
    });

    it('refuses an empty PATCH, an org:manage restriction and foreign projects with 422', async () => {
      const ws = await newWorkspace();
      const other = await newWorkspace();
      const readerId = await keyIdOf(await newKey(ws, { scopes: ['projects:read'] }));
      const managerId = await keyIdOf(ws.apiKey);
      assert.equal((await as(ws.apiKey).patch(`/api/v1/api-keys/${readerId}`, {})).status, 422);
      const restricted = await as(ws.apiKey).patch(`/api/v1/api-keys/${managerId}`, { projectIds: [ws.projectId] });
      assert.equal(restricted.status, 422);
      assert.equal(restricted.body.code, 'manage_key_restricted');
      const foreign = await as(ws.apiKey).patch(`/api/v1/api-keys/${readerId}`, { projectIds: [other.projectId] });
      assert.equal(foreign.status, 422);
      assert.equal(foreign.body.code, 'unknown_project');
    });

    it('answers 404 for another workspace’s key and for an unknown id', async () => {
      const ws = await newWorkspace();
      const other = await newWorkspace();
      const otherKeyId = await keyIdOf(await newKey(other, { scopes: ['projects:read'] }));
      for (const id of [otherKeyId, randomUUID()]) {
        assert.equal((await as(ws.apiKey).patch(`/api/v1/api-keys/${id}`, { workspaceResources: true })).status, 404);
        assert.equal((await as(ws.apiKey).delete(`/api/v1/api-keys/${id}`)).status, 404);
      }
      const row = await env().db('api_keys').where({ id: otherKeyId }).first();
      assert.equal(row.workspaceResources, false);
      assert.equal(row.revokedAt, null);
      assert.equal((await as(ws.apiKey).patch('/api/v1/api-keys/not-a-uuid', { workspaceResources: true })).status, 422);
    });
  });

  describe('DELETE /api/v1/api-keys/{key_id}', () => {
    it('revokes irreversibly: the key stops authenticating, leaves the list, and a second DELETE is 404', async () => {
      const ws = await newWorkspace();
      const created = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'doomed', scopes: ['org:read', 'projects:write'] });
      const { id, secret } = created.body.key;
      const made = await as(secret).post('/api/v1/projects', { name: 'made-before-revocation' });
      assert.equal(made.status, 201);

      const res = await as(ws.apiKey).delete(`/api/v1/api-keys/${id}`);
      assert.equal(res.status, 204);
      assert.equal(res.body, '');

      const refused = await as(secret).get('/api/v1/organization');
      assert.equal(refused.status, 401);
      assert.equal(refused.body.code, 'invalid_credential');
      const list = await as(ws.apiKey).get('/api/v1/api-keys');
      assert.ok(!list.body.keys.some((k: { id: string }) => k.id === id));
      assert.equal(list.body.pagination.total, 1);
      assert.equal((await as(ws.apiKey).delete(`/api/v1/api-keys/${id}`)).status, 404);
      assert.equal((await as(ws.apiKey).patch(`/api/v1/api-keys/${id}`, { workspaceResources: true })).status, 404, 'a revoked key cannot be edited back');

      // Earlier writes stay.
      const project = await as(ws.apiKey).get(`/api/v1/projects/${made.body.project.id}`);
      assert.equal(project.status, 200);
    });

    it('lets a key revoke itself', async () => {
      const ws = await newWorkspace();
      const self = await newKey(ws, { scopes: ['org:manage'] });
      assert.equal((await as(self).delete(`/api/v1/api-keys/${await keyIdOf(self)}`)).status, 204);
      assert.equal((await as(self).get('/api/v1/api-keys')).status, 401);
    });
  });

  describe('expiry', () => {
    it('refuses a key once its expiresAt has passed (401 credential_expired) but keeps listing it', async () => {
      const ws = await newWorkspace();
      // Far enough ahead that the key surely works before expiry, however slow the machine.
      const expiresAt = new Date(Date.now() + 3600_000).toISOString();
      const res = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'short-lived', scopes: ['org:read'], expiresAt });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.key.expiresAt, expiresAt);
      assert.equal((await as(res.body.key.secret).get('/api/v1/organization')).status, 200, 'works before its expiry');

      // Let the expiry pass on the runtime's clock, the key's row unchanged: its kept copy and the
      // database's check both read that time.
      env().clock.set(Date.parse(expiresAt));
      const refused = await as(res.body.key.secret).get('/api/v1/organization');
      assert.equal(refused.status, 401);
      assert.equal(refused.body.code, 'credential_expired');
      const listed = (await as(ws.apiKey).get('/api/v1/api-keys')).body.keys.find((k: { id: string }) => k.id === res.body.key.id);
      assert.ok(listed, 'an expired key is still listed');
      assert.equal(listed.expiresAt, expiresAt);
    });
  });

  describe('last use', () => {
    it('records lastUsedAt in batches, not with a write per request', async () => {
      const ws = await newWorkspace();
      const key = await newKey(ws, { scopes: ['org:read'] });
      const id = await keyIdOf(key);
      // A second API process of our own, so its recorder can be flushed by stopping it.
      const api = await startApi({ port: 0, host: '127.0.0.1' });
      let stopped = false;
      try {
        const before = Date.now();
        assert.equal((await requestAt(api.url, 'GET', '/api/v1/organization', { key })).status, 200);
        assert.equal((await requestAt(api.url, 'GET', '/api/v1/organization', { key })).status, 200);
        const row = await env().db('api_keys').where({ id }).first();
        assert.equal(row.lastUsedAt, null, 'the request itself wrote last use');
        await api.stop();
        stopped = true;
        const list = await as(ws.apiKey).get('/api/v1/api-keys');
        const listed = list.body.keys.find((k: { id: string }) => k.id === id);
        assert.ok(listed.lastUsedAt, 'the flush did not record last use');
        assert.ok(Date.parse(listed.lastUsedAt) >= before - 1000 && Date.parse(listed.lastUsedAt) <= Date.now());
      } finally {
        if (!stopped) await api.stop();
      }
    });
  });

  describe('accountable actor', () => {
    it('after the creating member leaves, refuses mutations with 403 actor_not_accountable but still serves reads', async () => {
      const ws = await newWorkspace();
      const member = await addMember(env().db, ws.workspaceId, { name: 'departing admin', role: 'admin' });
      const key = await newKey(ws, { scopes: ['org:manage', 'org:read'] }, member.id);
      const victimId = await keyIdOf(await newKey(ws, { scopes: ['org:read'] }));
      assert.equal((await as(key).post('/api/v1/projects', { name: 'while-member' })).status, 201);

      await removeMember(env().db, ws.workspaceId, member.id);

      const mutations = [
        await as(key).post('/api/v1/projects', { name: 'after-leaving' }),
        await as(key).patch(`/api/v1/projects/${ws.projectId}`, { description: 'changed' }),
        await as(key).post('/api/v1/api-keys', { name: 'new', scopes: ['org:read'] }),
        await as(key).patch(`/api/v1/api-keys/${victimId}`, { workspaceResources: true }),
        await as(key).delete(`/api/v1/api-keys/${victimId}`),
        await as(key).put('/api/v1/api-limits', { workspaceRequests: 10, apiKeyRequests: 10 }),
      ];
      for (const res of mutations) {
        assert.equal(res.status, 403, JSON.stringify(res.body));
        assert.equal(res.body.code, 'actor_not_accountable');
      }
      for (const path of ['/api/v1/organization', '/api/v1/api-keys', '/api/v1/projects', `/api/v1/projects/${ws.projectId}`, '/api/v1/api-limits']) {
        assert.equal((await as(key).get(path)).status, 200, path);
      }
      const projects = await env().db('projects').where({ workspaceId: ws.workspaceId }).pluck('name');
      assert.ok(!projects.includes('after-leaving'));
      assert.equal((await env().db('api_keys').where({ id: victimId }).first()).revokedAt, null);
      // The owner's key is untouched by another member leaving.
      assert.equal((await as(ws.apiKey).post('/api/v1/projects', { name: 'owner-still-can' })).status, 201);
    });
  });

  describe('GET /api/v1/api-keys', () => {
    it('pages through the keys and needs org:manage', async () => {
      const ws = await newWorkspace();
      for (let i = 0; i < 3; i++) await newKey(ws, { scopes: ['org:read'] });
      const page = await as(ws.apiKey).get('/api/v1/api-keys?limit=3&offset=0');
      assert.equal(page.status, 200);
      assert.equal(page.body.keys.length, 3);
      assert.deepEqual(page.body.pagination, { limit: 3, offset: 0, total: 4, nextOffset: 3 });
      const last = await as(ws.apiKey).get('/api/v1/api-keys?limit=3&offset=3');
      assert.equal(last.body.keys.length, 1);
      assert.equal(last.body.pagination.nextOffset, null);
      const reader = await newKey(ws, { scopes: ['org:read'] });
      const refused = await as(reader).get('/api/v1/api-keys');
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'insufficient_scope');
    });
  });
});
