import assert from 'node:assert/strict';
import type { CapabilityRuntime } from '../../../plugins/capability';
import { findCapability, installedDefinition } from '../../../plugins';
import { compareVersions, registerCapability, unregisterCapability } from '../../../plugins/registry';
import { installPlugin } from '../../../services/endpoints/plugins';
import { env } from '../../support/environment';
import { as, newKey, newWorkspace, raiseRequestLimits } from '../../support/fixtures';

/**
 * SPEC 9: capability contracts are versioned by the installed version. A second http_dataset
 * version (2.0.0, whose target needs a `region`) is registered for these tests: installations
 * made before it keep 1.0.0's contract (forms, validation, reads), new ones get 2.0.0, and an
 * installed version this Weft stops serving is refused by name instead of run by another contract.
 */
describe('Capability versions follow the installed version', function () {
  this.timeout(60_000);
  const v1 = findCapability('http_dataset');
  const v1Schema = v1.definition.targetSchema as { required: string[]; properties: Record<string, unknown> };
  const v2: CapabilityRuntime = {
    ...v1,
    definition: {
      ...v1.definition,
      version: '2.0.0',
      title: 'HTTP dataset 2',
      targetSchema: { ...v1Schema, required: [...v1Schema.required, 'region'], properties: { ...v1Schema.properties, region: { type: 'string' } } },
    },
  };
  let client: ReturnType<typeof as>;
  let oldInstallation: string;
  let newInstallation: string;

  const target = (extra: Record<string, unknown> = {}) => ({ request: { url: 'http://127.0.0.1:9/orders' }, response: { format: 'json', recordsPath: 'data' }, primaryKeys: ['id'], ...extra });
  const endpoint = (installationId: string, extra: Record<string, unknown> = {}) => client.post('/api/v1/data-endpoints', {
    name: `orders-${Math.random().toString(36).slice(2, 8)}`, namespace: 'tests', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: installationId, target: target(extra),
  });

  before(async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    const { db, encryptionKey } = env();
    const settings = { baseUrl: 'http://127.0.0.1:9/', allowPrivateNetwork: true };
    oldInstallation = (await installPlugin(db, encryptionKey, ws.workspaceId, 'http_dataset', settings)).id;
    registerCapability(v2);
    newInstallation = (await installPlugin(db, encryptionKey, ws.workspaceId, 'http_dataset', settings)).id;
    client = as(await newKey(ws, { scopes: ['plugins:read', 'endpoints:read', 'endpoints:write', 'data:read'] }));
  });
  after(() => {
    unregisterCapability('http_dataset', '2.0.0');
    registerCapability(v1);
  });

  it('orders versions numerically', () => {
    assert.ok(compareVersions('1.10.0', '1.9.2') > 0);
    assert.ok(compareVersions('2.0.0', '2.0') === 0);
    assert.ok(compareVersions('1.0.0', '2.0.0') < 0);
  });

  it('installs the newest version, and GET /plugins shows each installation its own version\'s contract', async () => {
    const res = await client.get('/api/v1/plugins');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const byId = new Map(res.body.plugins.map((p: { installationId: string }) => [p.installationId, p]));
    const old = byId.get(oldInstallation) as any;
    const current = byId.get(newInstallation) as any;
    assert.deepEqual([old.version, old.latestVersion, old.available, old.title], ['1.0.0', '2.0.0', true, v1.definition.title]);
    assert.equal(old.targetSchema.properties.region, undefined, 'the 1.0.0 form has no region');
    assert.deepEqual([current.version, current.latestVersion, current.available, current.title], ['2.0.0', '2.0.0', true, 'HTTP dataset 2']);
    assert.deepEqual(current.targetSchema.required, ['request', 'region']);
  });

  it('validates each endpoint against its installation\'s version', async () => {
    assert.equal((await endpoint(oldInstallation)).status, 201, '1.0.0 needs no region');
    const refused = await endpoint(oldInstallation, { region: 'eu' });
    assert.equal(refused.status, 422, '1.0.0 knows no region');
    const missing = await endpoint(newInstallation);
    assert.equal(missing.status, 422, JSON.stringify(missing.body));
    assert.match(JSON.stringify(missing.body.errors), /region/);
    assert.equal((await endpoint(newInstallation, { region: 'eu' })).status, 201, JSON.stringify(missing.body));
  });

  it('refuses an installed version this Weft no longer serves with 409 capability_version_unavailable, and lists it unavailable', async () => {
    const made = await endpoint(oldInstallation);
    assert.equal(made.status, 201);
    unregisterCapability('http_dataset', '1.0.0');
    try {
      assert.equal(installedDefinition('http_dataset', '1.0.0'), undefined);
      const read = await client.get(`/api/v1/data-endpoints/${made.body.dataEndpoint.id}/records`);
      assert.equal(read.status, 409, JSON.stringify(read.body));
      assert.equal(read.body.code, 'capability_version_unavailable');
      assert.match(read.body.message, /http_dataset 1\.0\.0.*serves 2\.0\.0/);
      const created = await endpoint(oldInstallation);
      assert.equal(created.status, 409);
      const listed = (await client.get('/api/v1/plugins')).body.plugins.find((p: { installationId: string }) => p.installationId === oldInstallation);
      assert.deepEqual([listed.version, listed.available, listed.latestVersion, listed.targetSchema], ['1.0.0', false, '2.0.0', {}]);
    } finally {
      registerCapability(v1);
    }
  });
});
