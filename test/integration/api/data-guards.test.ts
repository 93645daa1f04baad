import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { QueryJob } from '../../../db/models';
import { installPlugin } from '../../../services/endpoints/plugins';
import { env } from '../../support/environment';
import { externalDatabase, installationSettingsFor } from '../../support/external-postgres';
import { as, HttpResponse, keyIdOf, newKey, request, requestAt } from '../../support/fixtures';
import { bindAs, CONSUMER_SCOPES, endpointCount, GuardTenant, guardTenant, seedTable, tableEndpoint, tableEndpointBody, within } from '../../support/guarded-data';
import { connectMcp, toolRefusal } from '../../support/mcp-client';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, PipelineTenant, tableDestination, useEventsApi, waitForRun } from '../../support/pipelines';
import { RunningScript, startApiScript } from '../../support/processes';
import { action, currentSnapshot } from '../../support/source-writes';

// Guards follow the data (issue 33): the named read grants of a binding and the write policy guard
// the data an endpoint reaches (its dataIdentity), not the endpoint's id. A second endpoint over
// the same table, made on any installation of the capability or retargeted onto it, is guarded as
// the first one is, at every door that reads or writes records.

type Client = ReturnType<typeof as>;

/** A refusal with this status and problem code. */
function refused(res: HttpResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.equal(res.body.code, code, JSON.stringify(res.body));
}

const records = (client: Client, endpointId: string) => client.get(`/api/v1/data-endpoints/${endpointId}/records?limit=1000`);

/** The ids a records read answered (it must have answered 200). */
async function recordIds(client: Client, endpointId: string): Promise<unknown[]> {
  const res = await records(client, endpointId);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return (res.body.data as Array<{ id: unknown }>).map((row) => row.id).sort((a, b) => Number(a) - Number(b));
}

async function endpointOf(client: Client, endpointId: string) {
  const res = await client.get(`/api/v1/data-endpoints/${endpointId}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.dataEndpoint as { id: string; target: Record<string, unknown>; dataIdentity: string };
}

const unique = (base: string) => `${base}_${randomUUID().replace(/-/g, '').slice(0, 10)}`;

const SALARIES = [
  { id: 1, full_name: 'Ada', years: 36, salary: 9100 },
  { id: 2, full_name: 'Bob', years: 41, salary: 7200 },
];
const PEOPLE = { subjectTemplate: 'https://example.com/people/{id}', properties: { name: 'full_name', age: 'years' } };

describe('Guards follow the data', function () {
  this.timeout(180_000);

  describe('a managed table that a binding of one endpoint guards', () => {
    let t: GuardTenant;
    /** E: the endpoint whose binding requires the named read grant payroll. */
    let salaries: string;
    let bindingId: string;
    /** K: endpoints:read, endpoints:write and data:read, no named grant. */
    let k: Client;
    before(async () => {
      t = await guardTenant();
      salaries = await tableEndpoint(t.granted, t.managedInstallationId, 'salaries', { primaryKey: ['id'] });
      await seedTable(t.managedInstallationId, 'salaries', SALARIES);
      bindingId = (await bindAs(t.granted, t, { termId: 'Customer', dataEndpointId: salaries, mapping: PEOPLE, requiredReadPermissions: ['payroll'] })).id;
      k = as(await newKey(t.ws, { scopes: ['endpoints:read', 'endpoints:write', 'data:read'] }));
    });

    it('refuses a key without the grant a second endpoint over the table, on either installation, and makes none', async () => {
      refused(await records(k, salaries), 403, 'read_grant_required');
      const count = await endpointCount(t.ws.workspaceId);
      for (const installationId of [t.managedInstallationId, t.secondManagedInstallationId]) {
        const res = await k.post('/api/v1/data-endpoints', tableEndpointBody(installationId, 'salaries'));
        refused(res, 403, 'read_grant_required');
        assert.deepEqual(res.body.missingReadPermissions, ['payroll']);
      }
      assert.equal(await endpointCount(t.ws.workspaceId), count, 'no endpoint was made');

      // A key holding the grant may make them: the same data, whichever installation names it.
      const alias = await tableEndpoint(t.granted, t.managedInstallationId, 'salaries');
      const onSecond = await tableEndpoint(t.granted, t.secondManagedInstallationId, 'salaries');
      for (const id of [salaries, alias, onSecond]) assert.equal((await endpointOf(t.granted, id)).dataIdentity, 'managed_table:salaries');
      for (const id of [alias, onSecond]) {
        assert.deepEqual(await recordIds(t.granted, id), [1, 2], 'the alias reads the salaries');
        refused(await records(k, id), 403, 'read_grant_required');
      }
      const binding = await t.granted.get(`${t.base}/read-bindings/${bindingId}`);
      assert.equal(binding.status, 200, JSON.stringify(binding.body));
      assert.deepEqual(binding.body.binding.guardedEndpointIds, [salaries, alias, onSecond], 'the binding guards every endpoint over the table');
    });

    it('refuses moving an endpoint onto the table without the grant, and moving a guarded endpoint off it at all', async () => {
      const scratchTable = unique('scratch');
      const scratch = await tableEndpoint(k, t.managedInstallationId, scratchTable);
      refused(await k.patch(`/api/v1/data-endpoints/${scratch}`, { target: { table: 'salaries' } }), 403, 'read_grant_required');
      const unchanged = await endpointOf(k, scratch);
      assert.deepEqual(unchanged.target, { table: scratchTable });
      assert.equal(unchanged.dataIdentity, `managed_table:${scratchTable}`);

      // With the grant it moves, and is guarded as the table is from then on.
      const moved = await t.granted.patch(`/api/v1/data-endpoints/${scratch}`, { target: { table: 'salaries' } });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      assert.equal(moved.body.dataEndpoint.dataIdentity, 'managed_table:salaries');
      refused(await records(k, scratch), 403, 'read_grant_required');
      assert.deepEqual(await recordIds(t.granted, scratch), [1, 2]);
      // It carries no guard of its own (the binding is E's), so it may leave again.
      assert.equal((await t.granted.patch(`/api/v1/data-endpoints/${scratch}`, { target: { table: scratchTable } })).status, 200);

      // E has the binding: it cannot leave the table, whoever asks, and nothing changes.
      const off = await t.granted.patch(`/api/v1/data-endpoints/${salaries}`, { target: { table: unique('elsewhere'), primaryKey: ['id'] } });
      refused(off, 409, 'endpoint_guarded');
      assert.deepEqual(off.body.readBindingIds, [bindingId]);
      const kept = await endpointOf(t.granted, salaries);
      assert.deepEqual(kept.target, { table: 'salaries', primaryKey: ['id'] });
      assert.equal(kept.dataIdentity, 'managed_table:salaries');
      // A change that keeps the data is no retarget.
      assert.equal((await t.granted.patch(`/api/v1/data-endpoints/${salaries}`, { description: 'monthly salaries' })).status, 200);
      assert.equal((await t.granted.patch(`/api/v1/data-endpoints/${salaries}`, { target: { table: 'salaries', primaryKey: ['id'] } })).status, 200);
    });

    describe('through every door, a second endpoint over the table', () => {
      /** A: made by a key with the grant, with no binding of its own yet. */
      let alias: string;
      let orders: string;
      /** Every consumer scope, no named grant. */
      let keyless: string;
      let kDoors: Client;
      const ORDER_TOTALS = { subjectTemplate: 'https://example.com/pay/{id}', properties: { total: 'salary' } };
      before(async () => {
        alias = await tableEndpoint(t.granted, t.managedInstallationId, 'salaries', { primaryKey: ['id'] });
        const ordersTable = unique('orders');
        orders = await tableEndpoint(t.granted, t.managedInstallationId, ordersTable);
        await seedTable(t.managedInstallationId, ordersTable, [{ id: 10, amount: 5 }]);
        // Order is read through the alias, with no grant of its binding's own, and through an open table.
        await bindAs(t.granted, t, { termId: 'Order', dataEndpointId: alias, mapping: ORDER_TOTALS });
        await bindAs(t.granted, t, { termId: 'Order', dataEndpointId: orders, mapping: { subjectTemplate: 'https://example.com/orders/{id}', properties: { total: 'amount' } } });
        keyless = await newKey(t.ws, { scopes: CONSUMER_SCOPES });
        kDoors = as(keyless);
      });

      it('records: refused without the grant, read with it', async () => {
        refused(await records(kDoors, alias), 403, 'read_grant_required');
        assert.deepEqual(await recordIds(t.granted, alias), [1, 2]);
      });

      it('pipelines: a preview and a launch of a pipeline reading the alias are refused without the grant, and run with it', async () => {
        const destination = await tableEndpoint(t.granted, t.managedInstallationId, unique('salary_copy'), { role: 'destination', primaryKey: ['id'] });
        const pipeline = await t.granted.post(`/api/v1/projects/${t.ws.projectId}/pipelines`, { name: unique('copy'), document: linearDocument(alias, destination, { writeMode: 'upsert' }) });
        assert.equal(pipeline.status, 201, JSON.stringify(pipeline.body));
        const path = `/api/v1/projects/${t.ws.projectId}/pipelines/${pipeline.body.pipeline.id}`;

        const preview = await kDoors.post(`${path}/preview`, { sampleSize: 5 });
        refused(preview, 403, 'read_grant_required');
        assert.equal(JSON.stringify(preview.body).includes('Ada'), false, 'no record came back');
        refused(await kDoors.post(`${path}/execute`), 403, 'read_grant_required');
        const runs = await t.granted.get(`/api/v1/projects/${t.ws.projectId}/runs?pipelineId=${pipeline.body.pipeline.id}`);
        assert.equal(runs.body.pagination.total, 0, 'the refused launch recorded no run');

        const granted = await t.granted.post(`${path}/preview`, { sampleSize: 5 });
        assert.equal(granted.status, 200, JSON.stringify(granted.body));
        assert.deepEqual(granted.body.preview.nodes[0].records.map((r: { id: number }) => r.id), [1, 2]);
        const launched = await t.granted.post(`${path}/execute`);
        assert.equal(launched.status, 202, JSON.stringify(launched.body));
        const run = await waitForRun({ client: t.granted, projectId: t.ws.projectId } as PipelineTenant, launched.body.run.id);
        assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
        assert.deepEqual(await recordIds(t.granted, destination), [1, 2]);
      });

      it('bindings: binding the alias needs the grant of the table', async () => {
        const binding = { ontologyPackageId: t.packageId, termId: 'Customer', dataEndpointId: alias, mapping: { ...PEOPLE, subjectTemplate: 'https://example.com/staff/{id}' } };
        const count = (await t.granted.get(`${t.base}/read-bindings?dataEndpointId=${alias}`)).body.bindings.length;
        const bindOnly = as(await newKey(t.ws, { scopes: ['bindings:read', 'bindings:write'] }));
        refused(await bindOnly.post(`${t.base}/read-bindings`, binding), 403, 'read_grant_required');
        refused(await kDoors.post(`${t.base}/read-bindings`, binding), 403, 'read_grant_required');
        assert.equal((await t.granted.get(`${t.base}/read-bindings?dataEndpointId=${alias}`)).body.bindings.length, count, 'no binding was made');
        const made = await bindAs(t.granted, t, binding);
        assert.deepEqual(made.requiredReadPermissions, [], 'the binding names no grant of its own');
        assert.ok(made.guardedEndpointIds.includes(salaries) && made.guardedEndpointIds.includes(alias), JSON.stringify(made.guardedEndpointIds));
      });

      it('term reads and SPARQL leave the alias’s binding out without the grant', async () => {
        const termRecords = async (client: Client) => {
          const res = await client.get(`${t.base}/terms/Order/records?limit=100`);
          assert.equal(res.status, 200, JSON.stringify(res.body));
          return (res.body.data as Array<Record<string, unknown>>).map((r) => r['@id']).sort();
        };
        assert.deepEqual(await termRecords(kDoors), ['https://example.com/orders/10'], 'only the ungated binding is read');
        assert.deepEqual(await termRecords(t.granted), ['https://example.com/orders/10', 'https://example.com/pay/1', 'https://example.com/pay/2']);

        const totals = async (key: string) => {
          const query = `PREFIX : <${t.baseIri}> SELECT ?total WHERE { ?o :total ?total } ORDER BY ?total`;
          const res = await request('GET', `${t.base}/sparql?query=${encodeURIComponent(query)}`, { key, headers: { Accept: 'application/sparql-results+json' } });
          assert.equal(res.status, 200, JSON.stringify(res.body));
          return (res.body.results.bindings as Array<{ total: { value: string } }>).map((b) => Number(b.total.value));
        };
        assert.deepEqual(await totals(keyless), [5], 'no salary through SPARQL');
        assert.deepEqual(await totals(t.grantedKey), [5, 7200, 9100]);
      });

      it('published queries: an execution over a binding of the alias needs the grant', async () => {
        const created = await t.granted.post(`${t.base}/queries`, {
          name: unique('totals'),
          sparql: 'SELECT ?total WHERE { ?o :total ?total } ORDER BY ?total',
          inputSchema: { type: 'object', additionalProperties: false, properties: {} },
          outputSchema: { type: 'object', required: ['total'], properties: { total: { type: 'number' } } },
        });
        assert.equal(created.status, 201, JSON.stringify(created.body));
        const { id, version } = created.body.query;
        assert.deepEqual(version.requiredReadPermissions, [], 'no binding the query names has a grant of its own');
        assert.equal((await t.granted.post(`${t.base}/queries/${id}/releases`, { expectedQueryVersionId: version.id })).status, 201);
        const execute = `/api/v1/projects/${t.ws.projectId}/queries/${id}/execute`;
        const denied = await kDoors.post(execute, {});
        refused(denied, 403, 'read_grant_required');
        assert.deepEqual(denied.body.missingReadPermissions, ['payroll']);
        const allowed = await t.granted.post(execute, {});
        assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
        assert.deepEqual(allowed.body.data.map((row: { total: number }) => row.total), [5, 7200, 9100]);
      });

      it('MCP: source_create over the table and pipeline_execute of a pipeline reading the alias are refused as over HTTP', async () => {
        const mcp = await connectMcp(keyless);
        try {
          const count = await endpointCount(t.ws.workspaceId);
          const created = (await mcp.callTool({ name: 'source_create', arguments: { ...tableEndpointBody(t.secondManagedInstallationId, 'salaries'), idempotencyKey: `guards-${randomUUID()}` } })) as { isError?: boolean; structuredContent?: { code?: string } };
          assert.equal(created.isError, true, JSON.stringify(created.structuredContent));
          assert.equal(created.structuredContent?.code, 'read_grant_required');
          assert.equal(await endpointCount(t.ws.workspaceId), count);

          const destination = await tableEndpoint(t.granted, t.managedInstallationId, unique('mcp_copy'), { role: 'destination', primaryKey: ['id'] });
          const pipeline = await t.granted.post(`/api/v1/projects/${t.ws.projectId}/pipelines`, { name: unique('mcp'), document: linearDocument(alias, destination, { writeMode: 'upsert' }) });
          assert.equal(pipeline.status, 201, JSON.stringify(pipeline.body));
          const launched = (await mcp.callTool({ name: 'pipeline_execute', arguments: { projectId: t.ws.projectId, pipelineId: pipeline.body.pipeline.id, idempotencyKey: `guards-${randomUUID()}` } })) as { isError?: boolean; structuredContent?: { code?: string } };
          assert.equal(launched.isError, true, JSON.stringify(launched.structuredContent));
          assert.equal(launched.structuredContent?.code, 'read_grant_required');
        } finally {
          await mcp.close();
        }
      });

      it('governed writes: an update through the alias selects records by their values, so it needs the grant; an append does not', async () => {
        // One policy for the table, set through E: it governs writes through the alias.
        const policy = await t.granted.put(`/api/v1/data-endpoints/${salaries}/write-policy`, { allowedOperations: ['append', 'update'] });
        assert.equal(policy.status, 201, JSON.stringify(policy.body));
        const writer = as(await newKey(t.ws, { scopes: ['endpoints:read', 'data:read', 'data:write'] }));
        const tenant = { ws: t.ws } as Parameters<typeof action>[0];
        const writes = `/api/v1/data-endpoints/${alias}/writes`;
        const update = { operation: 'update', where: [{ field: 'id', op: 'eq', value: 2 }], set: { salary: 7300 } };
        refused(await writer.post(writes, action(tenant, await currentSnapshot(writer, alias), update)), 403, 'read_grant_required');
        const appended = await writer.post(writes, action(tenant, await currentSnapshot(writer, alias), { operation: 'append', rows: [{ id: 3, full_name: 'Cy', years: 29, salary: 6100 }] }));
        assert.equal(appended.status, 200, JSON.stringify(appended.body));
        const updated = await t.granted.post(writes, action(tenant, await currentSnapshot(t.granted, alias), update));
        assert.equal(updated.status, 200, JSON.stringify(updated.body));
        const rows = (await records(t.granted, salaries)).body.data as Array<{ id: number; salary: number }>;
        assert.deepEqual(rows.map((row) => [row.id, row.salary]).sort((a, b) => a[0] - b[0]), [[1, 9100], [2, 7300], [3, 6100]], 'both writes landed in the table E reads');
        assert.ok(policy.body.writePolicy.guardedEndpointIds.includes(alias), JSON.stringify(policy.body.writePolicy));
      });
    });
  });

  describe('a PostgreSQL table reached by two installations', () => {
    const database = `weft_data_guards_${process.pid}`;
    let t: GuardTenant;
    let external: pg.Client;
    let drop: () => Promise<void>;
    let first: string;
    let second: string;
    before(async () => {
      ({ client: external, drop } = await externalDatabase(database));
      await external.query('CREATE TABLE payroll (id integer PRIMARY KEY, full_name text NOT NULL, years integer, salary integer)');
      await external.query("INSERT INTO payroll VALUES (1, 'Ada', 36, 9100), (2, 'Bob', 41, 7200)");
      await external.query('CREATE TABLE teams (id integer PRIMARY KEY, name text)');
      await external.query("INSERT INTO teams VALUES (1, 'core')");
      t = await guardTenant();
      const settings = installationSettingsFor(database);
      first = (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', settings)).id;
      second = (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', settings)).id;
    });
    after(() => drop?.());

    const body = (installationId: string, target: Record<string, unknown>) => ({ name: unique('payroll'), namespace: 'external', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: installationId, target });

    it('guards an endpoint of another installation over the same table, and shares its write policy', async () => {
      const made = await t.granted.post('/api/v1/data-endpoints', body(first, { table: 'payroll' }));
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const original = made.body.dataEndpoint;
      await bindAs(t.granted, t, { termId: 'Customer', dataEndpointId: original.id, mapping: PEOPLE, requiredReadPermissions: ['payroll'] });

      const k = as(await newKey(t.ws, { scopes: ['endpoints:read', 'endpoints:write', 'data:read'] }));
      const count = await endpointCount(t.ws.workspaceId);
      refused(await k.post('/api/v1/data-endpoints', body(second, { schema: 'public', table: 'payroll' })), 403, 'read_grant_required');
      assert.equal(await endpointCount(t.ws.workspaceId), count);
      const twin = await t.granted.post('/api/v1/data-endpoints', body(second, { schema: 'public', table: 'payroll' }));
      assert.equal(twin.status, 201, JSON.stringify(twin.body));
      assert.equal(twin.body.dataEndpoint.dataIdentity, original.dataIdentity, 'the same database, schema and table');
      assert.match(original.dataIdentity, new RegExp(`^postgres_table://[^/]+:\\d+/${database}/public\\.payroll$`));
      refused(await records(k, twin.body.dataEndpoint.id), 403, 'read_grant_required');
      assert.deepEqual(await recordIds(t.granted, twin.body.dataEndpoint.id), [1, 2]);

      // Another table of the same database is other data: nothing guards it.
      const teams = await k.post('/api/v1/data-endpoints', body(second, { table: 'teams' }));
      assert.equal(teams.status, 201, JSON.stringify(teams.body));
      assert.notEqual(teams.body.dataEndpoint.dataIdentity, original.dataIdentity);
      assert.deepEqual(await recordIds(k, teams.body.dataEndpoint.id), [1]);

      // One write policy for the table, set through one endpoint and read through the other.
      const put = await t.granted.put(`/api/v1/data-endpoints/${original.id}/write-policy`, { allowedOperations: ['upsert'] });
      assert.equal(put.status, 201, JSON.stringify(put.body));
      const read = await t.granted.get(`/api/v1/data-endpoints/${twin.body.dataEndpoint.id}/write-policy`);
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.equal(read.body.writePolicy.id, put.body.writePolicy.id);
      assert.deepEqual(read.body.writePolicy.guardedEndpointIds, [original.id, twin.body.dataEndpoint.id]);
      refused(await t.granted.get(`/api/v1/data-endpoints/${teams.body.dataEndpoint.id}/write-policy`), 404, 'not_found');
    });
  });

  describe('an HTTP dataset named by two endpoints', () => {
    let api: EventsApi;
    let t: GuardTenant;
    let installations: string[];
    before(async () => {
      api = await new EventsApi().start();
      api.records = EventsApi.events(30);
      t = await guardTenant();
      installations = [];
      for (let i = 0; i < 2; i++) installations.push((await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'http_dataset', { baseUrl: api.baseUrl, allowPrivateNetwork: true })).id);
    });
    after(() => api.close());

    const body = (installationId: string, target: Record<string, unknown>) => ({
      name: unique('events'),
      namespace: 'remote',
      role: 'source',
      contractKind: 'source_stream',
      pluginCapabilityInstallationId: installationId,
      target: { response: { format: 'json', recordsPath: 'data' }, primaryKeys: ['id'], ...target },
    });

    it('is the same data whatever the paging, the window or the order of fixed parameters, and another fixed value is other data', async () => {
      const made = await t.granted.post('/api/v1/data-endpoints', body(installations[0], {
        request: { url: `${api.baseUrl}events?region=eu`, query: { status: 'open' } },
        pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 25 },
      }));
      assert.equal(made.status, 201, JSON.stringify(made.body));
      const original = made.body.dataEndpoint;
      await bindAs(t.granted, t, { termId: 'Order', dataEndpointId: original.id, mapping: { subjectTemplate: 'https://example.com/events/{id}', properties: { total: 'amount' } }, requiredReadPermissions: ['payroll'] });

      const k = as(await newKey(t.ws, { scopes: ['endpoints:read', 'endpoints:write', 'data:read'] }));
      const paged = body(installations[1], {
        request: { url: `${api.baseUrl}events`, query: { status: 'open', region: 'eu' } },
        pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 10 },
      });
      const windowed = body(installations[0], {
        request: { url: `${api.baseUrl}events?status=open&region=eu` },
        window: { startParameter: 'since', endParameter: 'until', lookback: 'P1D' },
      });
      const count = await endpointCount(t.ws.workspaceId);
      for (const alias of [paged, windowed]) refused(await k.post('/api/v1/data-endpoints', alias), 403, 'read_grant_required');
      assert.equal(await endpointCount(t.ws.workspaceId), count);
      assert.equal(original.dataIdentity, `http_dataset:${api.baseUrl}events?region=eu&status=open`);
      for (const alias of [paged, windowed]) {
        const res = await t.granted.post('/api/v1/data-endpoints', alias);
        assert.equal(res.status, 201, JSON.stringify(res.body));
        assert.equal(res.body.dataEndpoint.dataIdentity, original.dataIdentity);
        refused(await records(k, res.body.dataEndpoint.id), 403, 'read_grant_required');
        assert.equal((await recordIds(t.granted, res.body.dataEndpoint.id)).length, 30);
      }

      const closed = await k.post('/api/v1/data-endpoints', body(installations[1], { request: { url: `${api.baseUrl}events`, query: { region: 'eu', status: 'closed' } } }));
      assert.equal(closed.status, 201, JSON.stringify(closed.body));
      assert.equal(closed.body.dataEndpoint.dataIdentity, `http_dataset:${api.baseUrl}events?region=eu&status=closed`);
      assert.equal((await recordIds(k, closed.body.dataEndpoint.id)).length, 30, 'other data, unguarded');
    });
  });

  describe('write policies', () => {
    const fixture = useEventsApi(() => EventsApi.events(30));
    let t: PipelineTenant;
    let owner: Client;
    beforeEach(() => {
      t = fixture.t;
      owner = as(t.ws.apiKey);
    });
    const putPolicy = async (endpointId: string, policy: Record<string, unknown>) => {
      const res = await owner.put(`/api/v1/data-endpoints/${endpointId}/write-policy`, policy);
      assert.ok(res.status === 200 || res.status === 201, JSON.stringify(res.body));
      return res.body.writePolicy;
    };
    const pipelinePath = (pipelineId: string) => `/api/v1/projects/${t.projectId}/pipelines/${pipelineId}`;

    it('is one per table: set through one endpoint, read through another, and governed writes through either follow it', async () => {
      const table = unique('ledger');
      const a = await tableDestination(t, table, ['id'], 'source');
      const destination = await tableDestination(t, table, ['id']);
      const policy = await putPolicy(a, { allowedOperations: ['upsert'], requiredWritePermissions: ['ledger'] });
      const b = await tableDestination(t, table, ['id'], 'source');

      const read = await owner.get(`/api/v1/data-endpoints/${b}/write-policy`);
      assert.equal(read.status, 200, JSON.stringify(read.body));
      assert.equal(read.body.writePolicy.id, policy.id);
      assert.equal(policy.dataIdentity, `managed_table:${table}`);
      assert.deepEqual(policy.guardedEndpointIds, [a, destination], 'the endpoints over the table when it was set');
      assert.equal(read.body.writePolicy.dataEndpointId, b);
      assert.deepEqual(read.body.writePolicy.guardedEndpointIds, [a, destination, b]);
      assert.deepEqual(read.body.writePolicy.allowedOperations, ['upsert']);

      const writer = as(await newKey(t.ws, { scopes: ['endpoints:read', 'data:read', 'data:write'], writePermissions: ['ledger'] }));
      const ungranted = as(await newKey(t.ws, { scopes: ['endpoints:read', 'data:read', 'data:write'] }));
      const tenant = { ws: t.ws } as Parameters<typeof action>[0];
      const snapshot = await currentSnapshot(writer, b);
      refused(await writer.post(`/api/v1/data-endpoints/${b}/writes`, action(tenant, snapshot, { operation: 'append', rows: [{ id: 1, name: 'Ada' }] })), 403, 'operation_not_allowed');
      refused(await ungranted.post(`/api/v1/data-endpoints/${b}/writes`, action(tenant, snapshot, { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] })), 403, 'missing_grants');
      const applied = await writer.post(`/api/v1/data-endpoints/${b}/writes`, action(tenant, snapshot, { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] }));
      assert.equal(applied.status, 200, JSON.stringify(applied.body));
      assert.equal(applied.body.writeAction.status, 'applied');
      assert.deepEqual(await recordIds(t.client, a), [1], 'the write landed in the table every endpoint names');

      // The policy belongs to the table: deleting the endpoint it was set through leaves it there.
      assert.equal((await t.client.delete(`/api/v1/data-endpoints/${a}`)).status, 204);
      const kept = await owner.get(`/api/v1/data-endpoints/${b}/write-policy`);
      assert.equal(kept.status, 200, JSON.stringify(kept.body));
      assert.equal(kept.body.writePolicy.id, policy.id);
      assert.deepEqual(kept.body.writePolicy.guardedEndpointIds, [destination, b]);
    });

    it('refuses pipeline runs into governed data unless it lets runs write, and then asks data:write and its grants', async () => {
      const table = unique('governed');
      const a = await tableDestination(t, table, ['id'], 'source');
      const destination = await tableDestination(t, table, ['id']);
      const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, fixture.api), destination, { writeMode: 'upsert' }));
      const replacing = await createPipeline(t, linearDocument(await eventsSource(t, fixture.api), destination, { writeMode: 'replace' }));
      // The policy comes after the pipelines, through another endpoint over the table.
      const policy = { allowedOperations: ['append', 'upsert'], requiredWritePermissions: ['ledger'] };
      await putPolicy(a, policy);
      const validate = () => t.client.post(`${pipelinePath(pipeline.id)}/draft/validate`, {});
      refused(await validate(), 403, 'write_policy_forbids_runs');
      refused(await t.client.post(`${pipelinePath(pipeline.id)}/execute`), 403, 'write_policy_forbids_runs');
      refused(await t.client.post(`/api/v1/projects/${t.projectId}/pipelines`, { name: unique('into-governed'), document: linearDocument(await eventsSource(t, fixture.api), destination) }), 403, 'write_policy_forbids_runs');
      // The MCP tools answer as the routes do.
      assert.equal(await toolRefusal(t.key, 'pipeline_validate', { projectId: t.projectId, pipelineId: pipeline.id }), 'write_policy_forbids_runs');
      assert.equal(await toolRefusal(t.key, 'pipeline_execute', { projectId: t.projectId, pipelineId: pipeline.id, idempotencyKey: `guards-${randomUUID()}` }), 'write_policy_forbids_runs');

      await putPolicy(a, { ...policy, allowPipelineRuns: true });
      refused(await validate(), 403, 'insufficient_scope');
      const noScope = await t.client.post(`${pipelinePath(pipeline.id)}/execute`);
      refused(noScope, 403, 'insufficient_scope');
      assert.deepEqual(noScope.body.requiredScopes, ['data:write']);
      const noGrant = as(await newKey(t.ws, { scopes: ['pipelines:execute', 'runs:read', 'data:write'] }));
      refused(await noGrant.post(`${pipelinePath(pipeline.id)}/execute`), 403, 'missing_grants');
      assert.equal((await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`)).body.pagination.total, 0, 'no refused launch recorded a run');

      const launcher = as(await newKey(t.ws, { scopes: ['pipelines:execute', 'runs:read', 'data:write'], writePermissions: ['ledger'] }));
      // A replace deletes what the table held: it needs data:delete, and the policy does not allow deletes.
      const replace = await launcher.post(`${pipelinePath(replacing.id)}/execute`);
      refused(replace, 403, 'insufficient_scope');
      assert.deepEqual(replace.body.requiredScopes, ['data:delete']);
      refused(await as(await newKey(t.ws, { scopes: ['pipelines:execute', 'data:write', 'data:delete'], writePermissions: ['ledger'] })).post(`${pipelinePath(replacing.id)}/execute`), 403, 'operation_not_allowed');
      const launched = await launcher.post(`${pipelinePath(pipeline.id)}/execute`);
      assert.equal(launched.status, 202, JSON.stringify(launched.body));
      const run = await waitForRun({ ...t, client: launcher }, launched.body.run.id);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
      assert.equal((await recordIds(t.client, a)).length, 30, 'the records landed');
    });

    it('does not commit a run whose destination became governed while it ran, and says why', async () => {
      fixture.api.records = EventsApi.events(300);
      const table = unique('midrun');
      const a = await tableDestination(t, table, ['id'], 'source');
      const destination = await tableDestination(t, table, ['id']);
      const source = await eventsSource(t, fixture.api, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 10 } });
      const pipeline = await createPipeline(t, linearDocument(source, destination, { writeMode: 'upsert' }));
      // The run reads its first page, then waits at the second until the policy is in place.
      const release = fixture.api.holdFrom(2);
      let runId: string;
      try {
        runId = (await launch(t, pipeline.id)).id;
        await waitForRun(t, runId, (run) => run.status === 'running');
        await putPolicy(a, { allowedOperations: ['append', 'upsert'] });
      } finally {
        release();
      }
      const run = await waitForRun(t, runId);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.equal(run.error.code, 'write_policy_forbids_runs');
      assert.deepEqual(await recordIds(t.client, a), [], 'nothing was committed');
    });

    it('asks data:write and the policy’s grants of a new destination over governed data, and keeps its endpoints on it', async () => {
      const table = unique('guarded_out');
      const a = await tableDestination(t, table, ['id'], 'source');
      const policy = await putPolicy(a, { allowedOperations: ['append'], requiredWritePermissions: ['ledger'] });
      const count = await endpointCount(t.ws.workspaceId);
      const destination = tableEndpointBody(t.managedInstallationId, table, { role: 'destination', primaryKey: ['id'] });
      const noScope = await t.client.post('/api/v1/data-endpoints', destination);
      refused(noScope, 403, 'insufficient_scope');
      assert.deepEqual(noScope.body.requiredScopes, ['data:write']);
      const writerScopes = ['endpoints:read', 'endpoints:write', 'data:write'];
      refused(await as(await newKey(t.ws, { scopes: writerScopes })).post('/api/v1/data-endpoints', destination), 403, 'missing_grants');
      assert.equal(await endpointCount(t.ws.workspaceId), count, 'no endpoint was made');
      const made = await as(await newKey(t.ws, { scopes: writerScopes, writePermissions: ['ledger'] })).post('/api/v1/data-endpoints', destination);
      assert.equal(made.status, 201, JSON.stringify(made.body));
      // A source over it reads, and reading asks nothing of the policy.
      await tableDestination(t, table, ['id'], 'source');

      // Every endpoint over data with a policy stays on it.
      const off = await t.client.patch(`/api/v1/data-endpoints/${made.body.dataEndpoint.id}`, { target: { table: unique('elsewhere'), primaryKey: ['id'] } });
      refused(off, 409, 'endpoint_guarded');
      assert.equal(off.body.writePolicyId, policy.id);
      refused(await t.client.patch(`/api/v1/data-endpoints/${a}`, { target: { table: unique('elsewhere') } }), 409, 'endpoint_guarded');
    });

    it('refuses a scheduled run whose destination became governed after the schedule was made, and records why', async () => {
      const table = unique('scheduled');
      const a = await tableDestination(t, table, ['id'], 'source');
      const destination = await tableDestination(t, table, ['id']);
      const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, fixture.api), destination, { writeMode: 'upsert' }));
      const mcp = await connectMcp(t.key);
      let temporalScheduleId: string | undefined;
      try {
        const made = (await mcp.callTool({ name: 'pipeline_schedule_create', arguments: { projectId: t.projectId, pipelineId: pipeline.id, intervalSeconds: 3600, paused: true } })) as { isError?: boolean; structuredContent?: { schedule: { id: string; temporalScheduleId: string } } };
        assert.notEqual(made.isError, true, JSON.stringify(made.structuredContent));
        const schedule = made.structuredContent!.schedule;
        temporalScheduleId = schedule.temporalScheduleId;
        await putPolicy(a, { allowedOperations: ['append', 'upsert'] });
        await env().temporal.schedule.getHandle(temporalScheduleId).trigger();
        const runs = await within(60_000, async () => (await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`)).body.runs as any[], (list) => list.length > 0, 'the scheduled launch');
        assert.equal(runs.length, 1);
        assert.equal(runs[0].trigger, 'schedule');
        assert.equal(runs[0].scheduleId, schedule.id);
        const run = await waitForRun(t, runs[0].id);
        assert.equal(run.status, 'failed', JSON.stringify(run));
        assert.equal(run.error.code, 'write_policy_forbids_runs');
        assert.match(run.error.message, /allowPipelineRuns/);
        assert.deepEqual(await recordIds(t.client, a), [], 'nothing was written');
      } finally {
        await mcp.close();
        if (temporalScheduleId) await env().temporal.schedule.getHandle(temporalScheduleId).delete().catch(() => undefined);
      }
    });
  });

  describe('a guard added to data with several endpoints', () => {
    let t: GuardTenant;
    let other: RunningScript | undefined;
    let otherUrl: string;
    before(async () => {
      t = await guardTenant();
      ({ api: other, url: otherUrl } = await startApiScript({ LOG_LEVEL: 'error' }));
    });
    after(() => other?.stop());

    it('guards every one of them in this process and another within one second: a binding, then a retarget', async () => {
      const table = unique('ledger');
      const e1 = await tableEndpoint(t.granted, t.managedInstallationId, table);
      const e2 = await tableEndpoint(t.granted, t.secondManagedInstallationId, table);
      await seedTable(t.managedInstallationId, table, SALARIES);
      const openTable = unique('open');
      const e3 = await tableEndpoint(t.granted, t.managedInstallationId, openTable);
      await seedTable(t.managedInstallationId, openTable, [{ id: 7, full_name: 'Cy', years: 50 }]);
      // e2 is read through an ungated binding too (SPARQL): the guard must reach that door as well.
      await bindAs(t.granted, t, { termId: 'Order', dataEndpointId: e2, mapping: { subjectTemplate: 'https://example.com/pay/{id}', properties: { total: 'salary' } } });
      const key = await newKey(t.ws, { scopes: ['data:read', 'sparql:query'] });
      const processes = [env().baseUrl, otherUrl];
      const statuses = async (endpointId: string) => Promise.all(processes.map(async (base) => (await requestAt(base, 'GET', `/api/v1/data-endpoints/${endpointId}/records`, { key })).status));
      const query = encodeURIComponent(`PREFIX : <${t.baseIri}> SELECT ?total WHERE { ?o :total ?total } ORDER BY ?total`);
      const totals = async () => Promise.all(processes.map(async (base) => {
        const res = await requestAt(base, 'GET', `${t.base}/sparql?query=${query}`, { key, headers: { Accept: 'application/sparql-results+json' } });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return (res.body.results.bindings as Array<{ total: { value: string } }>).map((b) => Number(b.total.value));
      }));
      // Read a few times in both processes, so each keeps the endpoints' (empty) grants.
      for (let i = 0; i < 3; i++) {
        for (const id of [e2, e3]) assert.deepEqual(await statuses(id), [200, 200]);
        assert.deepEqual(await totals(), [[7200, 9100], [7200, 9100]]);
      }

      const binding = await bindAs(t.granted, t, { termId: 'Customer', dataEndpointId: e1, mapping: PEOPLE, requiredReadPermissions: ['payroll'] });
      await within(1_000, () => statuses(e2), (seen) => seen.every((status) => status === 403), 'the binding of e1 guarding e2 in both processes');
      await within(1_000, totals, (seen) => seen.every((rows) => rows.length === 0), 'the binding of e1 withholding e2’s binding from SPARQL in both processes');
      assert.deepEqual(binding.guardedEndpointIds, [e1, e2]);

      const moved = await t.granted.patch(`/api/v1/data-endpoints/${e3}`, { target: { table } });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      await within(1_000, () => statuses(e3), (seen) => seen.every((status) => status === 403), 'the retargeted endpoint guarded in both processes');
      assert.deepEqual((await t.granted.get(`${t.base}/read-bindings/${binding.id}`)).body.binding.guardedEndpointIds, [e1, e2, e3]);
    });
  });

  describe('published queries', () => {
    let t: GuardTenant;
    let queryId: string;
    let execute: string;
    let table: string;
    /** queries:execute, no named grant. */
    let plainKey: string;
    const completedJob = async (key: string) => QueryJob.query(env().db).insertAndFetch({
      workspaceId: t.ws.workspaceId,
      projectId: t.ws.projectId,
      queryId,
      releaseVersion: 1,
      apiKeyId: await keyIdOf(key),
      memberId: t.ws.memberId,
      status: 'completed',
      input: { input: {}, page: { limit: 10, offset: 0 } },
      inputHash: 'test',
      rows: [{ total: 100 }, { total: 250 }],
      rowCount: 2,
      workflowId: `test-job-${randomUUID()}`,
      finishedAt: new Date(),
      expiresAt: new Date(Date.now() + 3_600_000),
    } as never);
    const cursorOf = (job: QueryJob) => Buffer.from(JSON.stringify({ job: job.id, offset: 0 })).toString('base64url');

    before(async () => {
      t = await guardTenant(['audit']);
      table = unique('bonuses');
      const bonuses = await tableEndpoint(t.granted, t.managedInstallationId, table);
      await seedTable(t.managedInstallationId, table, [{ id: 1, amount: 100, label: 'q1' }, { id: 2, amount: 250, label: 'q2' }]);
      await bindAs(t.granted, t, { termId: 'Order', dataEndpointId: bonuses, mapping: { subjectTemplate: 'https://example.com/bonus/{id}', properties: { total: 'amount' } } });
      const created = await t.granted.post(`${t.base}/queries`, {
        name: 'bonus-totals',
        sparql: 'SELECT ?total WHERE { ?o :total ?total } ORDER BY ?total',
        inputSchema: { type: 'object', additionalProperties: false, properties: {} },
        outputSchema: { type: 'object', required: ['total'], properties: { total: { type: 'number' } } },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      queryId = created.body.query.id;
      assert.equal((await t.granted.post(`${t.base}/queries/${queryId}/releases`, { expectedQueryVersionId: created.body.query.version.id })).status, 201);
      execute = `/api/v1/projects/${t.ws.projectId}/queries/${queryId}/execute`;
      plainKey = await newKey(t.ws, { scopes: ['queries:execute'] });
    });

    it('re-check at each execution and continuation the grants the data needs now, and the release', async () => {
      const plain = as(plainKey);
      const first = await plain.post(execute, {});
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.deepEqual(first.body.data, [{ total: 100 }, { total: 250 }]);
      const plainJob = await completedJob(plainKey);
      const grantedJob = await completedJob(t.grantedKey);
      assert.equal((await plain.post(`${execute}?cursor=${cursorOf(plainJob)}`, {})).status, 200, 'a continuation before the grant');

      // A grant added to the data later, by a binding of another endpoint over the same table.
      const other = await tableEndpoint(t.granted, t.secondManagedInstallationId, table);
      await bindAs(t.granted, t, { termId: 'Customer', dataEndpointId: other, mapping: { subjectTemplate: 'https://example.com/c/{id}', properties: { name: 'label' } }, requiredReadPermissions: ['audit'] });
      const denied = await plain.post(execute, {});
      refused(denied, 403, 'read_grant_required');
      assert.deepEqual(denied.body.missingReadPermissions, ['audit']);
      const continued = await plain.post(`${execute}?cursor=${cursorOf(plainJob)}`, {});
      refused(continued, 403, 'read_grant_required');
      assert.equal(JSON.stringify(continued.body).includes('250'), false, 'no stored row came back');
      const allowed = await t.granted.post(execute, {});
      assert.equal(allowed.status, 200, JSON.stringify(allowed.body));
      assert.equal((await t.granted.post(`${execute}?cursor=${cursorOf(grantedJob)}`, {})).status, 200);

      // A release retired after the job started: its continuation is gone too.
      assert.equal((await t.granted.patch(`${t.base}/queries/${queryId}/releases/1`, { status: 'retired' })).status, 200);
      refused(await t.granted.post(`${execute}?cursor=${cursorOf(grantedJob)}`, {}), 410, 'release_retired');
      refused(await t.granted.post(execute, {}), 410, 'release_retired');
    });
  });
});
