import assert from 'node:assert/strict';
import { startApi } from '../../../scripts/runtime';
import { as, newKey, newWorkspace, request, requestAt } from '../../support/fixtures';
import { env } from '../../support/environment';

describe('The foundation', () => {
  describe('health probes', () => {
    it('answers liveness without credentials', async () => {
      const res = await request('GET', '/healthz');
      assert.equal(res.status, 200);
      assert.equal(res.body.status, 'ok');
    });

    it('reports ready when PostgreSQL and Temporal answer', async () => {
      const res = await request('GET', '/readyz');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.checks, { postgres: 'ok', temporal: 'ok' });
    });

    it('runs a workflow the API starts and a worker completes, and says nothing about the worker’s process or host', async () => {
      const res = await request('GET', '/readyz?worker=true');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      // No pid, host name or other identity of the worker that answered: the probe takes no credential.
      assert.deepEqual(res.body, { status: 'ready', checks: { postgres: 'ok', temporal: 'ok', worker: 'ok' } });
    });

    it('answers 503 not_ready naming Temporal, without addresses, when its Temporal connection is unusable', async () => {
      const api = await startApi({ port: 0, host: '127.0.0.1' });
      try {
        assert.equal((await requestAt(api.url, 'GET', '/readyz')).status, 200, 'ready while its connection is open');
        await api.temporalConnection.close();
        const res = await requestAt(api.url, 'GET', '/readyz');
        assert.equal(res.status, 503, JSON.stringify(res.body));
        assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
        assert.equal(res.body.code, 'not_ready');
        assert.equal(res.body.status, 503);
        assert.match(res.body.message, /temporal/i);
        assert.doesNotMatch(res.body.message, /postgres/i, 'PostgreSQL still answers');
        assert.equal(res.body.requestId, res.headers.get('x-request-id'));
        const text = JSON.stringify(res.body);
        const temporal = process.env.TEMPORAL_ADDRESS!;
        const database = new URL(process.env.DATABASE_URL!);
        for (const leak of [temporal, temporal.split(':')[0], database.host, database.hostname, 'localhost', '127.0.0.1', '::1']) {
          assert.equal(text.includes(leak), false, `the readiness answer must not name ${leak}: ${text}`);
        }
        // The shared test API, with its own connection, is still ready.
        assert.equal((await request('GET', '/readyz')).status, 200);
      } finally {
        await api.stop();
      }
    });
  });

  describe('GET /api/v1/organization', () => {
    it('returns the workspace of the bootstrapped key', async () => {
      const ws = await newWorkspace('Acme Analytics');
      const res = await as(ws.apiKey).get('/api/v1/organization');
      assert.equal(res.status, 200);
      assert.equal(res.body.organization.id, ws.workspaceId);
      assert.equal(res.body.organization.name, 'Acme Analytics');
      assert.equal(res.body.organization.projectCount, 1);
      assert.equal(res.body.organization.memberCount, 1);
      assert.deepEqual(res.body.organization.settings, { semanticConsumerMode: 'off' });
      assert.ok(Math.abs(Date.parse(res.body.organization.createdAt) - Date.now()) < 60_000, 'createdAt is an ISO time of the bootstrap');
    });

    it('counts only the allowlisted projects for a project-restricted key', async () => {
      const ws = await newWorkspace();
      await as(ws.apiKey).post('/api/v1/projects', { name: 'second' });
      const restricted = await newKey(ws, { scopes: ['org:read'], projectIds: [ws.projectId] });
      assert.equal((await as(ws.apiKey).get('/api/v1/organization')).body.organization.projectCount, 2);
      assert.equal((await as(restricted).get('/api/v1/organization')).body.organization.projectCount, 1);
    });

    it('is 401 in the problem format without a key', async () => {
      const res = await request('GET', '/api/v1/organization');
      assert.equal(res.status, 401);
      assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
      assert.equal(res.body.code, 'missing_credential');
      assert.equal(res.body.status, 401);
      assert.equal(typeof res.body.message, 'string');
      assert.equal(res.body.requestId, res.headers.get('x-request-id'));
    });
  });

  describe('errors and request ids', () => {
    it('gives every response a request id, echoing a sane incoming one', async () => {
      const res = await request('GET', '/healthz', { headers: { 'X-Request-Id': 'trace-abc.123' } });
      assert.equal(res.headers.get('x-request-id'), 'trace-abc.123');
      const generated = await request('GET', '/healthz', { headers: { 'X-Request-Id': 'bad id with spaces' } });
      assert.match(generated.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    });

    it('answers unknown routes with a 404 problem', async () => {
      const res = await request('GET', '/api/v1/nothing-here');
      assert.equal(res.status, 404);
      assert.equal(res.body.code, 'route_not_found');
    });

    it('answers malformed JSON with a 400 problem, not a 500', async () => {
      const ws = await newWorkspace();
      const res = await request('POST', '/api/v1/projects', { key: ws.apiKey, rawBody: '{"name": ', headers: { 'Content-Type': 'application/json' } });
      assert.equal(res.status, 400);
      assert.equal(res.body.code, 'malformed_json');
    });
  });

  it('answers a wrong method, OPTIONS and an unknown method with 405 and an Allow header, in the problem format', async () => {
    for (const method of ['DELETE', 'OPTIONS', 'PROPFIND']) {
      const res = await request(method, '/api/v1/organization');
      assert.equal(res.status, 405, method);
      assert.equal(res.body.code, 'method_not_allowed', method);
      assert.equal(res.headers.get('allow'), 'GET, HEAD', method);
    }
  });

  it('answers a body that is not JSON with 415', async () => {
    const ws = await newWorkspace();
    const res = await request('POST', '/api/v1/projects', { key: ws.apiKey, rawBody: 'name=x', headers: { 'Content-Type': 'text/plain' } });
    assert.equal(res.status, 415);
    assert.equal(res.body.code, 'unsupported_media_type');
  });

  it('refuses NUL characters and absurd nesting with a 4xx before anything is stored', async () => {
    const ws = await newWorkspace();
    const nul = await as(ws.apiKey).post('/api/v1/projects', { name: 'a\u0000b' });
    assert.equal(nul.status, 422);
    assert.equal(nul.body.code, 'invalid_character');
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const nested = await request('POST', '/api/v1/projects', { key: ws.apiKey, rawBody: `{"name":"x","description":${deep}}`, headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'deep-nesting-1' } });
    assert.equal(nested.status, 400);
    assert.equal(nested.body.code, 'too_deeply_nested');
    const filter = await as(ws.apiKey).get(`/api/v1/projects?name=${encodeURIComponent('a\u0000b')}`);
    assert.equal(filter.status, 422);
  });

  it('accepts ids only in the canonical lowercase form it issues', async () => {
    const ws = await newWorkspace();
    const upper = await as(ws.apiKey).get(`/api/v1/projects/${ws.projectId.toUpperCase()}`);
    assert.equal(upper.status, 422);
    assert.match(JSON.stringify(upper.body.errors), /lowercase/);
    const urn = await as(ws.apiKey).get(`/api/v1/projects/urn:uuid:${ws.projectId}`);
    assert.equal(urn.status, 422);
  });

  describe('OpenAPI and docs', () => {
    it('serves an OpenAPI 3.1 document whose routes declare their scopes', async () => {
      const res = await request('GET', '/api/v1/openapi.json');
      assert.equal(res.status, 200);
      assert.equal(res.body.openapi, '3.1.0');
      const getOrg = res.body.paths['/api/v1/organization'].get;
      assert.deepEqual(getOrg['x-weft-scopes'], ['org:read']);
      assert.ok(getOrg.responses['401']);
      assert.equal(res.body.components.schemas.Problem.required.includes('code'), true);
    });

    it('serves a human-readable docs page', async () => {
      const res = await request('GET', '/docs');
      assert.equal(res.status, 200);
      assert.match(String(res.body), /<h1>Weft API/);
      assert.match(String(res.body), /\/api\/v1\/organization/);
    });
  });

  it('keeps the test database reachable for fixtures', async () => {
    const row = await env().db.raw('select 1 as one');
    assert.equal(row.rows[0].one, 1);
  });
});
