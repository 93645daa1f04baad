import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { env } from '../../support/environment';
import { as, newKey, newWorkspace } from '../../support/fixtures';

describe('Projects', () => {
  describe('POST /api/v1/projects', () => {
    it('creates a project with projects:write', async () => {
      const ws = await newWorkspace();
      const writer = await newKey(ws, { scopes: ['projects:write'] });
      const res = await as(writer).post('/api/v1/projects', { name: 'Sales', description: 'Revenue data' });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const { project } = res.body;
      assert.match(project.id, /^[0-9a-f-]{36}$/);
      assert.equal(project.name, 'Sales');
      assert.equal(project.description, 'Revenue data');
      assert.ok(!Number.isNaN(Date.parse(project.createdAt)) && !Number.isNaN(Date.parse(project.updatedAt)));
      assert.equal((await env().db('projects').where({ id: project.id }).first()).workspaceId, ws.workspaceId);
      const noDescription = await as(writer).post('/api/v1/projects', { name: 'Plain' });
      assert.equal(noDescription.body.project.description, '');
    });

    it('answers 409 to a duplicate name in the same workspace, but allows it in another', async () => {
      const ws = await newWorkspace();
      const other = await newWorkspace();
      assert.equal((await as(ws.apiKey).post('/api/v1/projects', { name: 'Twin' })).status, 201);
      const duplicate = await as(ws.apiKey).post('/api/v1/projects', { name: 'Twin' });
      assert.equal(duplicate.status, 409);
      assert.equal(duplicate.body.code, 'already_exists');
      assert.equal((await as(other.apiKey).post('/api/v1/projects', { name: 'Twin' })).status, 201);
    });

    it('refuses invalid bodies with 422', async () => {
      const ws = await newWorkspace();
      for (const body of [{}, { name: '' }, { name: '   ' }, { name: 'x'.repeat(201) }, { name: 5 }, { name: 'ok', description: 'd'.repeat(2001) }, { name: 'ok', workspaceId: ws.workspaceId }]) {
        const res = await as(ws.apiKey).post('/api/v1/projects', body);
        assert.equal(res.status, 422, JSON.stringify(body));
        assert.equal(res.body.code, 'validation_failed');
        assert.ok(res.body.errors.length > 0);
      }
      assert.deepEqual(await env().db('projects').where({ workspaceId: ws.workspaceId }).pluck('name'), ['default']);
    });

    it('is refused to a project-restricted key: it could never see the new project', async () => {
      const ws = await newWorkspace();
      const restricted = await newKey(ws, { scopes: ['projects:write', 'projects:read'], projectIds: [ws.projectId] });
      const res = await as(restricted).post('/api/v1/projects', { name: 'escape' });
      assert.equal(res.status, 403);
      assert.equal(res.body.code, 'restricted_key');
      const reader = await newKey(ws, { scopes: ['projects:read'] });
      assert.equal((await as(reader).post('/api/v1/projects', { name: 'nope' })).status, 403);
    });
  });

  describe('GET /api/v1/projects and /api/v1/projects/{project_id}', () => {
    it('lists and reads the workspace’s projects with projects:read', async () => {
      const ws = await newWorkspace();
      const created = (await as(ws.apiKey).post('/api/v1/projects', { name: 'Second', description: 'two' })).body.project;
      const reader = await newKey(ws, { scopes: ['projects:read'] });
      const list = await as(reader).get('/api/v1/projects');
      assert.equal(list.status, 200);
      assert.deepEqual(list.body.projects.map((p: { id: string }) => p.id), [ws.projectId, created.id]);
      assert.deepEqual(list.body.pagination, { limit: 50, offset: 0, total: 2, nextOffset: null });
      const one = await as(reader).get(`/api/v1/projects/${created.id}`);
      assert.equal(one.status, 200);
      assert.deepEqual(one.body.project, created);
      const byName = await as(reader).get('/api/v1/projects?name=Second');
      assert.deepEqual(byName.body.projects.map((p: { id: string }) => p.id), [created.id]);
    });

    it('never lists or reads another workspace’s projects', async () => {
      const ws = await newWorkspace();
      const other = await newWorkspace();
      const list = await as(ws.apiKey).get('/api/v1/projects');
      assert.ok(!list.body.projects.some((p: { id: string }) => p.id === other.projectId));
      const res = await as(ws.apiKey).get(`/api/v1/projects/${other.projectId}`);
      assert.equal(res.status, 404);
      assert.equal(res.body.code, 'not_found');
      assert.equal((await as(ws.apiKey).get(`/api/v1/projects/${randomUUID()}`)).status, 404);
      assert.equal((await as(ws.apiKey).get('/api/v1/projects/not-a-uuid')).status, 422);
    });

    it('shows a restricted key only its allowlist, and it never gains projects created later', async () => {
      const ws = await newWorkspace();
      const allowed = (await as(ws.apiKey).post('/api/v1/projects', { name: 'Allowed' })).body.project;
      const restricted = await newKey(ws, { scopes: ['projects:read', 'projects:write'], projectIds: [allowed.id] });
      const later = (await as(ws.apiKey).post('/api/v1/projects', { name: 'Later' })).body.project;

      const list = await as(restricted).get('/api/v1/projects');
      assert.deepEqual(list.body.projects.map((p: { id: string }) => p.id), [allowed.id]);
      assert.equal(list.body.pagination.total, 1);
      assert.deepEqual((await as(restricted).get('/api/v1/projects?name=Later')).body.projects, []);
      assert.equal((await as(restricted).get(`/api/v1/projects/${allowed.id}`)).status, 200);
      for (const id of [later.id, ws.projectId]) {
        const res = await as(restricted).get(`/api/v1/projects/${id}`);
        assert.equal(res.status, 403);
        assert.equal(res.body.code, 'project_denied');
        const patch = await as(restricted).patch(`/api/v1/projects/${id}`, { description: 'sneaky' });
        assert.equal(patch.status, 403);
        assert.equal(patch.body.code, 'project_denied');
      }
      assert.equal((await env().db('projects').where({ id: later.id }).first()).description, '');
      // An unrestricted key does see projects created later.
      const open = await newKey(ws, { scopes: ['projects:read'] });
      assert.equal((await as(open).get('/api/v1/projects')).body.pagination.total, 3);
    });

    it('pages with limit and offset, reporting total and nextOffset', async () => {
      const ws = await newWorkspace();
      for (let i = 1; i <= 4; i++) assert.equal((await as(ws.apiKey).post('/api/v1/projects', { name: `p${i}` })).status, 201);
      const first = await as(ws.apiKey).get('/api/v1/projects?limit=2');
      assert.equal(first.body.projects.length, 2);
      assert.deepEqual(first.body.pagination, { limit: 2, offset: 0, total: 5, nextOffset: 2 });
      const second = await as(ws.apiKey).get('/api/v1/projects?limit=2&offset=2');
      assert.deepEqual(second.body.pagination, { limit: 2, offset: 2, total: 5, nextOffset: 4 });
      const last = await as(ws.apiKey).get('/api/v1/projects?limit=2&offset=4');
      assert.equal(last.body.projects.length, 1);
      assert.deepEqual(last.body.pagination, { limit: 2, offset: 4, total: 5, nextOffset: null });
      const beyond = await as(ws.apiKey).get('/api/v1/projects?offset=10');
      assert.deepEqual(beyond.body.projects, []);
      assert.equal(beyond.body.pagination.nextOffset, null);
      const ids = [...first.body.projects, ...second.body.projects, ...last.body.projects].map((p: { id: string }) => p.id);
      assert.equal(new Set(ids).size, 5, 'pages neither repeat nor skip');
      assert.equal((await as(ws.apiKey).get('/api/v1/projects?limit=200')).status, 200);
    });

    it('refuses bad paging and unknown query parameters with 422', async () => {
      const ws = await newWorkspace();
      for (const query of ['limit=0', 'limit=201', 'limit=-1', 'limit=abc', 'limit=1.5', 'offset=-1', 'offset=x', 'limit=1&limit=2', 'sort=name', 'name=']) {
        const res = await as(ws.apiKey).get(`/api/v1/projects?${query}`);
        assert.equal(res.status, 422, query);
        assert.equal(res.body.code, 'validation_failed', query);
      }
    });
  });

  describe('PATCH /api/v1/projects/{project_id}', () => {
    it('renames and describes a project with projects:write', async () => {
      const ws = await newWorkspace();
      const writer = await newKey(ws, { scopes: ['projects:write'] });
      const before = (await as(ws.apiKey).get(`/api/v1/projects/${ws.projectId}`)).body.project;
      const res = await as(writer).patch(`/api/v1/projects/${ws.projectId}`, { name: 'Renamed', description: 'new words' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.project.name, 'Renamed');
      assert.equal(res.body.project.description, 'new words');
      assert.equal(res.body.project.createdAt, before.createdAt);
      assert.ok(Date.parse(res.body.project.updatedAt) >= Date.parse(before.updatedAt));
      const onlyDescription = await as(writer).patch(`/api/v1/projects/${ws.projectId}`, { description: 'again' });
      assert.equal(onlyDescription.body.project.name, 'Renamed');
    });

    it('answers 409 to a rename onto another project’s name, 422 to bad bodies, 404 to other workspaces', async () => {
      const ws = await newWorkspace();
      const other = await newWorkspace();
      await as(ws.apiKey).post('/api/v1/projects', { name: 'Taken' });
      const clash = await as(ws.apiKey).patch(`/api/v1/projects/${ws.projectId}`, { name: 'Taken' });
      assert.equal(clash.status, 409);
      assert.equal(clash.body.code, 'already_exists');
      for (const body of [{}, { name: '' }, { id: randomUUID() }, { workspaceId: other.workspaceId }]) {
        assert.equal((await as(ws.apiKey).patch(`/api/v1/projects/${ws.projectId}`, body)).status, 422, JSON.stringify(body));
      }
      const foreign = await as(ws.apiKey).patch(`/api/v1/projects/${other.projectId}`, { name: 'Hijacked' });
      assert.equal(foreign.status, 404);
      assert.equal((await env().db('projects').where({ id: other.projectId }).first()).name, 'default');
      const reader = await newKey(ws, { scopes: ['projects:read'] });
      const refused = await as(reader).patch(`/api/v1/projects/${ws.projectId}`, { name: 'x' });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'insufficient_scope');
    });
  });
});
