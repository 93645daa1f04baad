import assert from 'node:assert/strict';
import { loadEncryptionKey } from '../../../core/config';
import { installPlugin, openInstallation } from '../../../services/endpoints/plugins';
import { ManagedTableMemory } from '../../../plugins/managed-table/memory';
import { PostgresTablePools } from '../../../plugins/postgres-table/pool';
import { SnapshotNotices } from '../../../plugins/snapshot-notices';
import { findCapability } from '../../../plugins';
import { addMember, BootstrapResult, removeMember } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { as, newKey, newWorkspace } from '../../support/fixtures';
import { startOrdersServer, OrdersServer } from '../../../scripts/demo-orders-api';

const UPSTREAM_SECRET = 'Bearer upstream-token-5f2c9d';

async function installHttp(ws: BootstrapResult, baseUrl: string, extra: Record<string, unknown> = {}): Promise<string> {
  const installation = await installPlugin(env().db, loadEncryptionKey(), ws.workspaceId, 'http_dataset', {
    baseUrl,
    headers: { Authorization: UPSTREAM_SECRET },
    allowPrivateNetwork: true,
    ...extra,
  });
  return installation.id;
}

function ordersEndpoint(installationId: string, baseUrl: string, overrides: Record<string, unknown> = {}) {
  return {
    name: 'orders',
    namespace: 'shop',
    role: 'source',
    contractKind: 'source_stream',
    pluginCapabilityInstallationId: installationId,
    target: {
      request: { url: `${baseUrl}orders` },
      response: { format: 'json', recordsPath: 'data' },
      primaryKeys: ['id'],
      pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 50 },
    },
    schemaHints: { primaryKey: ['id'], columns: [{ name: 'id', type: 'integer' }, { name: 'total', type: 'integer' }, { name: 'status', type: 'string' }] },
    trustRank: 'trusted',
    description: 'Orders from the shop API',
    emits: ['json'],
    ...overrides,
  };
}

describe('Data endpoints and records reads', () => {
  let upstream: OrdersServer;
  let ws: BootstrapResult;
  let installationId: string;
  let key: string;

  before(async () => {
    upstream = await startOrdersServer(250);
    ws = await newWorkspace();
    installationId = await installHttp(ws, upstream.baseUrl);
    key = await newKey(ws, { scopes: ['endpoints:read', 'endpoints:write', 'data:read', 'plugins:read'] });
  });

  after(() => upstream.close());

  async function createOrders(overrides: Record<string, unknown> = {}): Promise<string> {
    const res = await as(key).post('/api/v1/data-endpoints', ordersEndpoint(installationId, upstream.baseUrl, { name: `orders-${Math.random().toString(36).slice(2, 8)}`, ...overrides }));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    return res.body.dataEndpoint.id;
  }

  describe('GET /plugins', () => {
    it('lists the installed capability with its version, roles and target schema, never its credentials', async () => {
      const res = await as(key).get('/api/v1/plugins');
      assert.equal(res.status, 200);
      const plugin = res.body.plugins.find((p: { installationId: string }) => p.installationId === installationId);
      assert.equal(plugin.capability, 'http_dataset');
      assert.equal(plugin.version, '1.0.0');
      assert.deepEqual(plugin.roles, [{ role: 'source', contractKind: 'source_stream' }]);
      assert.equal(plugin.targetSchema.type, 'object');
      assert.doesNotMatch(JSON.stringify(res.body), /upstream-token/);
    });

    it('denies a project-restricted key without workspaceResources, and allows one with it', async () => {
      const restricted = await newKey(ws, { scopes: ['plugins:read'], projectIds: [ws.projectId] });
      const denied = await as(restricted).get('/api/v1/plugins');
      assert.equal(denied.status, 403);
      assert.equal(denied.body.code, 'workspace_resources_denied');
      const allowed = await newKey(ws, { scopes: ['plugins:read'], projectIds: [ws.projectId], workspaceResources: true });
      assert.equal((await as(allowed).get('/api/v1/plugins')).status, 200);
    });
  });

  describe('creating', () => {
    it('returns {dataEndpoint} with the workspace taken from the key and the configuration persisted', async () => {
      const res = await as(key).post('/api/v1/data-endpoints', ordersEndpoint(installationId, upstream.baseUrl, { name: 'orders.v1:eu_west-2' }));
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const endpoint = res.body.dataEndpoint;
      assert.match(endpoint.id, /^[0-9a-f-]{36}$/);
      assert.equal(endpoint.workspaceId, ws.workspaceId);
      assert.equal(endpoint.capability.name, 'http_dataset');
      assert.equal(endpoint.trustRank, 'trusted');
      assert.equal(endpoint.target.pagination.maxPages, 100, 'schema defaults are stored');
      const fetched = await as(key).get(`/api/v1/data-endpoints/${endpoint.id}`);
      assert.deepEqual(fetched.body.dataEndpoint, endpoint);
      assert.equal(upstream.requests.length, 0, 'creating an endpoint starts no ingestion');
    });

    it('replays a retried create with the same Idempotency-Key instead of creating twice', async () => {
      const body = ordersEndpoint(installationId, upstream.baseUrl, { name: 'idempotent-orders' });
      const headers = { 'Idempotency-Key': 'create-idempotent-orders' };
      const first = await as(key).post('/api/v1/data-endpoints', body, { headers });
      const second = await as(key).post('/api/v1/data-endpoints', body, { headers });
      assert.equal(first.status, 201);
      assert.equal(second.status, 201);
      assert.deepEqual(second.body, first.body);
      assert.equal(second.headers.get('idempotent-replayed'), 'true');
      const list = await as(key).get('/api/v1/data-endpoints?name=idempotent-orders');
      assert.equal(list.body.dataEndpoints.length, 1);
    });

    const invalidCases: Array<[string, Record<string, unknown>, RegExp]> = [
      ['a name with spaces', { name: 'bad name' }, /\/name/],
      ['a namespace with a slash', { namespace: 'a/b' }, /\/namespace/],
      ['an empty target', { target: {} }, /\/target/],
      ['a target with a password', { target: { request: { url: 'http://127.0.0.1/orders' }, password: 'x' } }, /\/target\/password/],
      ['a target with a host', { target: { request: { url: 'http://127.0.0.1/orders', host: 'db.internal' } } }, /\/target\/request\/host/],
      ['a target with an API key parameter', { target: { request: { url: 'http://127.0.0.1/orders', query: { 'API-Key': 'sk_live_1' } } } }, /\/target\/request\/query\/API-Key/],
      ['a role the capability lacks', { role: 'destination' }, /\/role/],
      ['a contract kind that does not match', { contractKind: 'sink_table' }, /\/contractKind/],
      ['a format the capability does not emit', { emits: ['csv'] }, /\/emits\/0/],
      ['a target outside the base URL', { target: { request: { url: 'http://example.org/orders' } } }, /\/target\/request\/url/],
      ['a target that breaks the contract', { target: { request: { url: 'x' }, pagination: { type: 'sideways' } } }, /\/target/],
      ['a workspaceId in the body', { workspaceId: '00000000-0000-4000-8000-000000000000' }, /\/workspaceId/],
      ['an unknown installation', { pluginCapabilityInstallationId: '00000000-0000-4000-8000-000000000000' }, /\/pluginCapabilityInstallationId/],
    ];
    for (const [label, override, path] of invalidCases) {
      it(`rejects ${label} with a 422 naming the field, writing nothing`, async () => {
        const before = await env().db('data_endpoints').where({ workspaceId: ws.workspaceId }).count({ n: '*' });
        const res = await as(key).post('/api/v1/data-endpoints', ordersEndpoint(installationId, upstream.baseUrl, { name: 'rejected', ...override }));
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.match(JSON.stringify(res.body.errors), path);
        assert.equal(typeof res.body.message, 'string');
        const after = await env().db('data_endpoints').where({ workspaceId: ws.workspaceId }).count({ n: '*' });
        assert.deepEqual(after, before);
      });
    }

    it('refuses another workspace’s installation as if it did not exist', async () => {
      const other = await newWorkspace();
      const otherInstallation = await installHttp(other, upstream.baseUrl);
      const res = await as(key).post('/api/v1/data-endpoints', ordersEndpoint(otherInstallation, upstream.baseUrl, { name: 'stolen' }));
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'unknown_installation');
    });

    it('answers a duplicate namespace/name with 409', async () => {
      await createOrders({ name: 'twice' });
      const res = await as(key).post('/api/v1/data-endpoints', ordersEndpoint(installationId, upstream.baseUrl, { name: 'twice' }));
      assert.equal(res.status, 409);
      assert.equal(res.body.code, 'endpoint_name_taken');
    });
  });

  describe('listing, reading, changing and deleting', () => {
    it('filters by name, namespace and role and pages', async () => {
      const space = await newWorkspace();
      const inst = await installHttp(space, upstream.baseUrl);
      const k = await newKey(space, { scopes: ['endpoints:read', 'endpoints:write'] });
      for (const [name, namespace] of [['a', 'x'], ['b', 'x'], ['c', 'y']]) {
        assert.equal((await as(k).post('/api/v1/data-endpoints', ordersEndpoint(inst, upstream.baseUrl, { name, namespace }))).status, 201);
      }
      const byNamespace = await as(k).get('/api/v1/data-endpoints?namespace=x');
      assert.deepEqual(byNamespace.body.dataEndpoints.map((e: { name: string }) => e.name).sort(), ['a', 'b']);
      const page = await as(k).get('/api/v1/data-endpoints?limit=2&offset=0&role=source');
      assert.equal(page.body.dataEndpoints.length, 2);
      assert.deepEqual(page.body.pagination, { limit: 2, offset: 0, total: 3, nextOffset: 2 });
      assert.equal((await as(k).get('/api/v1/data-endpoints?role=sideways')).status, 422);
    });

    it('hides another workspace’s endpoint behind a 404', async () => {
      const id = await createOrders();
      const other = await newWorkspace();
      const otherKey = await newKey(other, { scopes: ['endpoints:read', 'endpoints:write', 'data:read'] });
      assert.equal((await as(otherKey).get(`/api/v1/data-endpoints/${id}`)).status, 404);
      assert.equal((await as(otherKey).patch(`/api/v1/data-endpoints/${id}`, { description: 'mine now' })).status, 404);
      assert.equal((await as(otherKey).delete(`/api/v1/data-endpoints/${id}`)).status, 404);
      assert.equal((await as(otherKey).get(`/api/v1/data-endpoints/${id}/records`)).status, 404);
    });

    it('revalidates the target on PATCH and keeps the old configuration when it fails', async () => {
      const id = await createOrders();
      const bad = await as(key).patch(`/api/v1/data-endpoints/${id}`, { target: { request: { url: 'http://elsewhere.example/orders' } } });
      assert.equal(bad.status, 422);
      const good = await as(key).patch(`/api/v1/data-endpoints/${id}`, { description: 'renamed', freshness: 'hourly', ownerTeam: 'sales' });
      assert.equal(good.status, 200);
      assert.equal(good.body.dataEndpoint.description, 'renamed');
      assert.equal(good.body.dataEndpoint.target.request.url, `${upstream.baseUrl}orders`);
      const cleared = await as(key).patch(`/api/v1/data-endpoints/${id}`, { description: null, trustRank: null });
      assert.equal(cleared.status, 200);
      assert.equal(cleared.body.dataEndpoint.description, null);
      assert.equal(cleared.body.dataEndpoint.trustRank, null);
      const immutable = await as(key).patch(`/api/v1/data-endpoints/${id}`, { role: 'destination' });
      assert.equal(immutable.status, 422);
      assert.match(immutable.body.message, /fixed at creation/);
    });

    it('deletes with an accountable member, and not without one', async () => {
      const id = await createOrders();
      const leaver = await addMember(env().db, ws.workspaceId, { name: 'leaver', role: 'admin' });
      const leaverKey = await newKey(ws, { scopes: ['endpoints:write', 'endpoints:read'] }, leaver.id);
      await removeMember(env().db, ws.workspaceId, leaver.id);
      const refused = await as(leaverKey).delete(`/api/v1/data-endpoints/${id}`);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.code, 'actor_not_accountable');
      const res = await as(key).delete(`/api/v1/data-endpoints/${id}`);
      assert.equal(res.status, 204);
      assert.equal((await as(key).get(`/api/v1/data-endpoints/${id}`)).status, 404);
    });


    it('checks the connection, validates the target and discovers fields through the capability', async () => {
      const id = await createOrders();
      const check = await as(key).post(`/api/v1/data-endpoints/${id}/check`);
      assert.equal(check.status, 200);
      assert.equal(check.body.ok, true, check.body.message);
      assert.equal(upstream.requests.at(-1)?.authorization, UPSTREAM_SECRET, 'installation headers are sent upstream');
      const validation = await as(key).post(`/api/v1/data-endpoints/${id}/validate`);
      assert.deepEqual(validation.body, { valid: true, problems: [] });
      const schema = await as(key).get(`/api/v1/data-endpoints/${id}/schema`);
      assert.equal(schema.status, 200);
      assert.deepEqual(schema.body.fields.map((f: { name: string }) => f.name).sort(), ['id', 'status', 'total']);
    });
  });

  describe('records reads', () => {
    let endpointId: string;
    before(async () => {
      endpointId = await createOrders({ name: 'orders-read' });
    });

    it('reads 100 records by default and follows cursors to the end without loss or repetition', async () => {
      const seen: number[] = [];
      let cursor: string | null = null;
      let pages = 0;
      let last: any;
      do {
        const suffix: string = cursor ? `?cursor=${encodeURIComponent(cursor)}` : '';
        const res = await as(key).get(`/api/v1/data-endpoints/${endpointId}/records${suffix}`);
        assert.equal(res.status, 200, JSON.stringify(res.body));
        seen.push(...res.body.data.map((r: { id: number }) => r.id));
        assert.equal(res.body.metadata.rowCount, res.body.data.length);
        cursor = res.body.metadata.nextCursor;
        last = res.body.metadata;
        pages += 1;
      } while (cursor && pages < 10);
      assert.equal(pages, 3);
      assert.deepEqual(seen, Array.from({ length: 250 }, (_, i) => i + 1));
      // Page pagination learns of the end from an empty sixth page.
      assert.equal(last.stopReason, 'empty_page');
      assert.equal(last.hasMore, false);
    });

    it('applies select, where and limit', async () => {
      const where = encodeURIComponent(JSON.stringify([{ field: 'status', op: 'eq', value: 'open' }, { field: 'id', op: 'lte', value: 30 }]));
      const res = await as(key).get(`/api/v1/data-endpoints/${endpointId}/records?select=id&select=status&where=${where}&limit=5`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.data, [1, 4, 7, 10, 13].map((id) => ({ id, status: 'open' })));
    });

    it('binds cursors to the caller and the read parameters', async () => {
      const first = await as(key).get(`/api/v1/data-endpoints/${endpointId}/records?limit=10&select=id,total`);
      const cursor = encodeURIComponent(first.body.metadata.nextCursor);
      const otherKey = await newKey(ws, { scopes: ['data:read'] });
      const foreign = await as(otherKey).get(`/api/v1/data-endpoints/${endpointId}/records?limit=10&select=id,total&cursor=${cursor}`);
      assert.equal(foreign.status, 422);
      assert.equal(foreign.body.code, 'cursor_not_yours');
      const changed = await as(key).get(`/api/v1/data-endpoints/${endpointId}/records?limit=20&select=id,total&cursor=${cursor}`);
      assert.equal(changed.status, 422);
      assert.equal(changed.body.code, 'cursor_parameters_changed');
      const raw = first.body.metadata.nextCursor as string;
      const flipped = raw.slice(0, 40) + (raw[40] === 'A' ? 'B' : 'A') + raw.slice(41);
      for (const forged of [`${raw}x`, flipped]) {
        const tampered = await as(key).get(`/api/v1/data-endpoints/${endpointId}/records?limit=10&select=id,total&cursor=${encodeURIComponent(forged)}`);
        assert.equal(tampered.status, 422);
        assert.equal(tampered.body.code, 'invalid_cursor');
      }
      assert.doesNotMatch(Buffer.from(first.body.metadata.nextCursor, 'base64url').toString('latin1'), /pageNumber|skip/, 'cursors are opaque');
      const same = await as(key).get(`/api/v1/data-endpoints/${endpointId}/records?limit=10&select=id,total&cursor=${cursor}`);
      assert.equal(same.status, 200);
      assert.equal(same.body.data[0].id, 11);
    });

    it('ends cursors when the endpoint’s target changes', async () => {
      const id = await createOrders();
      const first = await as(key).get(`/api/v1/data-endpoints/${id}/records?limit=10`);
      const { target } = (await as(key).get(`/api/v1/data-endpoints/${id}`)).body.dataEndpoint;
      const changed = await as(key).patch(`/api/v1/data-endpoints/${id}`, { target: { ...target, pagination: { type: 'offset', parameter: 'offset' } } });
      assert.equal(changed.status, 200, JSON.stringify(changed.body));
      const stale = await as(key).get(`/api/v1/data-endpoints/${id}/records?limit=10&cursor=${encodeURIComponent(first.body.metadata.nextCursor)}`);
      assert.equal(stale.status, 422);
      assert.equal(stale.body.code, 'cursor_parameters_changed');
    });

    const badReads: Array<[string, string, string]> = [
      ['an oversized limit', 'limit=5000', 'validation_failed'],
      ['a zero limit', 'limit=0', 'validation_failed'],
      ['a where that is not JSON', `where=${encodeURIComponent('[{field:')}`, 'invalid_where'],
      ['a where that is not an array', `where=${encodeURIComponent('{"field":"id"}')}`, 'invalid_where'],
      ['a where with an unknown op', `where=${encodeURIComponent('[{"field":"id","op":"like","value":1}]')}`, 'invalid_where'],
      ['an in without values', `where=${encodeURIComponent('[{"field":"id","op":"in"}]')}`, 'invalid_where'],
      ['an orderBy that is not JSON', 'orderBy=id', 'invalid_orderBy'],
      ['an orderBy with a bad direction', `orderBy=${encodeURIComponent('[{"field":"id","direction":"up"}]')}`, 'invalid_orderBy'],
      ['an empty select field', 'select=id,,total', 'invalid_select'],
      ['an unknown field', 'select=id,secret_column', 'unknown_field'],
      ['an unknown where field', `where=${encodeURIComponent('[{"field":"nope","op":"exists"}]')}`, 'unknown_field'],
      ['a snapshot the capability cannot read', 'snapshotId=abc', 'snapshot_not_supported'],
      ['an asOf that is not a timestamp', 'asOf=yesterday', 'validation_failed'],
      ['an unknown parameter', 'offset=10', 'validation_failed'],
      ['an orderBy the remote API cannot honour across pages', `orderBy=${encodeURIComponent('[{"field":"id","direction":"desc"}]')}`, 'order_not_supported'],
    ];
    for (const [label, query, code] of badReads) {
      it(`answers ${label} with a clear 4xx`, async () => {
        const res = await as(key).get(`/api/v1/data-endpoints/${endpointId}/records?${query}`);
        assert.equal(res.status, 422, JSON.stringify(res.body));
        assert.equal(res.body.code, code);
      });
    }

    for (const [path, upstreamStatus] of [['broken', 500], ['forbidden', 401], ['html', 200]] as const) {
      it(`answers 502 when the remote API misbehaves (${path}), never its status as ours`, async () => {
        const id = await createOrders({ target: { request: { url: `${upstream.baseUrl}${path}` }, response: { recordsPath: 'data' } } });
        const res = await as(key).get(`/api/v1/data-endpoints/${id}/records`);
        assert.equal(res.status, 502, JSON.stringify(res.body));
        assert.equal(res.body.status, 502);
        assert.match(res.body.code, /^upstream_/);
        if (upstreamStatus !== 200) assert.equal(res.body.upstreamStatus, upstreamStatus);
        assert.doesNotMatch(JSON.stringify(res.body), /upstream-token/);
      });
    }

    it('asks for declared columns before filtering an endpoint whose fields are unknown', async () => {
      const id = await createOrders({ schemaHints: undefined });
      const res = await as(key).get(`/api/v1/data-endpoints/${id}/records?select=id,totl`);
      assert.equal(res.status, 422);
      assert.equal(res.body.code, 'schema_unknown');
      const plain = await as(key).get(`/api/v1/data-endpoints/${id}/records?limit=3`);
      assert.equal(plain.status, 200);
      assert.equal(plain.body.data.length, 3);
    });

    it('needs data:read and, for restricted keys, workspaceResources', async () => {
      const noScope = await newKey(ws, { scopes: ['endpoints:read'] });
      assert.equal((await as(noScope).get(`/api/v1/data-endpoints/${endpointId}/records`)).status, 403);
      const restricted = await newKey(ws, { scopes: ['data:read'], projectIds: [ws.projectId] });
      assert.equal((await as(restricted).get(`/api/v1/data-endpoints/${endpointId}/records`)).body.code, 'workspace_resources_denied');
    });

    it('refuses loopback addresses unless the installation allows them', async () => {
      const strict = await installHttp(ws, upstream.baseUrl, { allowPrivateNetwork: false });
      const res = await as(key).post('/api/v1/data-endpoints', ordersEndpoint(strict, upstream.baseUrl, { name: 'strict-orders' }));
      assert.equal(res.status, 201);
      const check = await as(key).post(`/api/v1/data-endpoints/${res.body.dataEndpoint.id}/check`);
      assert.equal(check.body.ok, false);
      assert.equal(check.body.details.code, 'address_refused');
      const read = await as(key).get(`/api/v1/data-endpoints/${res.body.dataEndpoint.id}/records`);
      assert.equal(read.status, 403);
      assert.equal(read.body.code, 'address_refused');
      assert.doesNotMatch(JSON.stringify(read.body), /upstream-token/);
    });
  });
});

describe('Records reads of managed tables through the API', () => {
  it('reads each committed snapshot by snapshotId and by asOf, with cursors that stay on that snapshot', async () => {
    const ws = await newWorkspace();
    const installation = await installPlugin(env().db, loadEncryptionKey(), ws.workspaceId, 'managed_table', {});
    const key = await newKey(ws, { scopes: ['endpoints:write', 'endpoints:read', 'data:read'] });
    const created = await as(key).post('/api/v1/data-endpoints', {
      name: 'customers',
      namespace: 'crm',
      role: 'source',
      contractKind: 'source_stream',
      pluginCapabilityInstallationId: installation.id,
      target: { table: 'customers', primaryKey: ['id'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const endpoint = created.body.dataEndpoint;

    const runtime = findCapability('managed_table');
    const ctx = { installation: openInstallation(installation, loadEncryptionKey()), db: env().db, managedTables: new ManagedTableMemory(env().db), postgresTablePools: new PostgresTablePools(), snapshotNotices: new SnapshotNotices() };
    const first = await runtime.writeRecords!(ctx, endpoint.target, {
      operation: 'append',
      rows: Array.from({ length: 12 }, (_, i) => ({ id: i + 1, tier: 'basic' })),
      provenance: { kind: 'write', id: 'seed' },
    });
    const second = await runtime.writeRecords!(ctx, endpoint.target, {
      operation: 'update',
      where: [{ field: 'id', op: 'lte', value: 3 }],
      set: { tier: 'gold' },
      provenance: { kind: 'write', id: 'promote' },
    });

    const read = (query: string) => as(key).get(`/api/v1/data-endpoints/${endpoint.id}/records?${query}`);
    const gold = encodeURIComponent(JSON.stringify([{ field: 'tier', op: 'eq', value: 'gold' }]));
    const latest = await read(`where=${gold}`);
    assert.equal(latest.status, 200, JSON.stringify(latest.body));
    assert.equal(latest.body.data.length, 3);
    assert.equal(latest.body.metadata.snapshot.id, second.snapshot!.id);

    const before = await read(`where=${gold}&snapshotId=${first.snapshot!.id}`);
    assert.equal(before.body.data.length, 0);
    const asOf = await read(`where=${gold}&asOf=${encodeURIComponent(first.snapshot!.committedAt!)}`);
    assert.equal(asOf.body.metadata.snapshot.id, first.snapshot!.id);

    const orderBy = encodeURIComponent(JSON.stringify([{ field: 'id', direction: 'desc' }]));
    const page1 = await read(`limit=5&orderBy=${orderBy}&snapshotId=${first.snapshot!.id}`);
    assert.deepEqual(page1.body.data.map((r: { id: number }) => r.id), [12, 11, 10, 9, 8]);
    const page2 = await read(`limit=5&orderBy=${orderBy}&snapshotId=${first.snapshot!.id}&cursor=${encodeURIComponent(page1.body.metadata.nextCursor)}`);
    assert.deepEqual(page2.body.data.map((r: { id: number }) => r.id), [7, 6, 5, 4, 3]);
    assert.equal(page2.body.data.at(-1).tier, 'basic', 'the cursor stays on the requested snapshot');

    const unknown = await read('snapshotId=00000000-0000-4000-8000-000000000000');
    assert.equal(unknown.status >= 400 && unknown.status < 500, true);
    assert.equal(unknown.body.code, 'unknown_snapshot');
  });
});

describe('Records reads of managed tables as JSON text', () => {
  // Stored values whose JSON PostgreSQL and JavaScript write differently (spacing, digits, key order).
  const awkward = [
    { id: 1, amount: 1.5, tiny: 0.0000001, huge: 1e21, negative: -0 },
    { id: 2, text: 'quote " backslash \\ slash / tab \t newline \n nul-free \u0001 \u001f \u007f \u2028 é 😀', 'key with space': ': , {}', '': 'empty key' },
    { id: 3, nested: { b: [1, 2.50, { c: null, d: true, e: false }], a: [] }, list: ['x, y', 'a: b', '"', '\\"'] },
    { id: 4, 10: 'array-index keys are listed first by JavaScript', b: 1, 2: 'two' },
    { id: 5, ' lead': 1, zz: '\\', z: '\\\\"' },
  ];

  it('answers with the bytes JSON.stringify writes of the records, on the first read and on every read after', async () => {
    const ws = await newWorkspace();
    const installation = await installPlugin(env().db, loadEncryptionKey(), ws.workspaceId, 'managed_table', {});
    const key = await newKey(ws, { scopes: ['endpoints:write', 'endpoints:read', 'data:read'] });
    const created = await as(key).post('/api/v1/data-endpoints', {
      name: 'awkward', namespace: 'json', role: 'source', contractKind: 'source_stream',
      pluginCapabilityInstallationId: installation.id, target: { table: 'awkward_values', primaryKey: ['id'] },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const runtime = findCapability('managed_table');
    const ctx = { installation: openInstallation(installation, loadEncryptionKey()), db: env().db, managedTables: new ManagedTableMemory(env().db), postgresTablePools: new PostgresTablePools(), snapshotNotices: new SnapshotNotices() };
    // Written as JSON text, so the stored numbers keep the digits JavaScript would round.
    await env().db.transaction(async (trx) => {
      await runtime.writeRecords!({ ...ctx, db: trx }, created.body.dataEndpoint.target, { operation: 'append', rows: awkward, provenance: { kind: 'write', id: 'seed' } });
      await trx.raw(`UPDATE "weft_ws_${ws.workspaceId.replace(/-/g, '')}".awkward_values SET data = data || ?::jsonb WHERE row_key = '[1]'`, ['{"big": 12345678901234567890, "precise": 0.1234567890123456789, "trailing": 2.50, "exact": 1E+2}']);
    });
    const raw = async (query: string) => {
      const response = await fetch(`${env().baseUrl}/api/v1/data-endpoints/${created.body.dataEndpoint.id}/records?${query}`, { headers: { Authorization: `Bearer ${key}` } });
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json; charset=utf-8$/);
      return response.text();
    };
    // Records 2 and 5 hold only values both write alike (the page is compacted, not parsed); 1, 3 and 4 do not.
    const alike = `where=${encodeURIComponent(JSON.stringify([{ field: 'id', op: 'in', values: [2, 5] }]))}`;
    for (const query of ['limit=2', 'limit=10', alike]) {
      const texts = [await raw(query), await raw(query), await raw(query)];
      const answer = JSON.parse(texts[0]);
      assert.equal(texts[0], JSON.stringify(answer), 'written as JSON.stringify writes it');
      // The cursor is sealed with a fresh nonce each time; everything else is the same bytes.
      const withoutCursor = (text: string) => text.replace(/"nextCursor":"[^"]*"/, '"nextCursor":"…"');
      assert.deepEqual(texts.slice(1).map(withoutCursor), [withoutCursor(texts[0]), withoutCursor(texts[0])]);
      assert.equal(answer.metadata.rowCount, answer.data.length);
    }
    const all = JSON.parse(await raw('limit=10'));
    assert.deepEqual(all.data.map((r: { id: number }) => r.id), [1, 2, 3, 4, 5]);
    assert.equal(all.data[0].big, Number('12345678901234567890'));
    assert.equal(all.data[0].precise, Number('0.1234567890123456789'));
    assert.equal(all.data[0].trailing, 2.5);
    assert.equal(all.data[0].tiny, 0.0000001);
    assert.deepEqual(Object.keys(all.data[3]), ['2', '10', 'b', 'id']);
    assert.deepEqual(all.data[1], awkward[1]);
    assert.deepEqual(all.data[2], awkward[2]);
    // select projects as before: the named fields in the order asked, missing ones as null.
    const selected = JSON.parse(await raw('limit=10&select=text,id,nested'));
    assert.deepEqual(selected.data[1], { text: awkward[1].text, id: 2, nested: null });
    assert.deepEqual(Object.keys(selected.data[0]), ['text', 'id', 'nested']);
  });
});
