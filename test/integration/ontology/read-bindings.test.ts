import assert from 'node:assert/strict';
import { as, keyIdOf, newKey } from '../../support/fixtures';
import { bind, customerOntology, ONTOLOGY_SCOPES, OntologyTenant, ontologyTenant, seededTable } from '../../support/ontology';

describe('Read bindings, term-record reads and shape checks', function () {
  this.timeout(60_000);
  let t: OntologyTenant;
  let packageId: string;
  let customers: string;
  before(async () => {
    t = await ontologyTenant();
    packageId = await customerOntology(t);
    customers = await seededTable(t, [
      { id: 1, full_name: 'Ada', years: 36 },
      { id: 2, full_name: 'Bob', years: 17 },
      { id: 3, years: 40 },
    ]);
  });

  const customerBinding = (extra: Record<string, unknown> = {}) => ({
    ontologyPackageId: packageId,
    termId: 'Customer',
    dataEndpointId: customers,
    mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } },
    ...extra,
  });

  it('validates a binding, naming every problem: unknown term, property, field and a wrong-role endpoint', async () => {
    const dest = await t.client.post('/api/v1/data-endpoints', {
      name: `dest-${Date.now()}`, namespace: 'ontology', role: 'destination', contractKind: 'sink_table',
      pluginCapabilityInstallationId: t.managedInstallationId, target: { table: `d_${Date.now()}` },
    });
    const bad = await t.client.post(`${t.base}/read-bindings`, customerBinding({ mapping: { subjectTemplate: 'https://example.com/c/{id}', properties: { name: 'no_such_field', colour: 'years' } } }));
    assert.equal(bad.status, 422, JSON.stringify(bad.body));
    assert.equal(bad.body.code, 'binding_invalid');
    const paths = bad.body.errors.map((e: { path: string }) => e.path).sort();
    assert.deepEqual(paths, ['/mapping/properties/colour', '/mapping/properties/name']);
    const wrong = await t.client.post(`${t.base}/read-bindings`, customerBinding({ termId: 'Shop', dataEndpointId: dest.body.dataEndpoint.id }));
    assert.equal(wrong.status, 422);
    assert.deepEqual(wrong.body.errors.map((e: { path: string }) => e.path).sort(), ['/dataEndpointId', '/termId']);
  });

  it('keeps its endpoint from being deleted, naming the binding, until the binding is gone', async () => {
    const orders = await seededTable(t, [{ id: 1, full_name: 'Ada', years: 36 }]);
    const bindingId = await bind(t, customerBinding({ dataEndpointId: orders }));
    const blocked = await t.client.delete(`/api/v1/data-endpoints/${orders}`);
    assert.equal(blocked.status, 409);
    assert.equal(blocked.body.code, 'endpoint_referenced');
    assert.deepEqual(blocked.body.references, [{ kind: 'read_binding', id: bindingId, name: 'Customer' }]);
    assert.equal((await t.client.get(`/api/v1/data-endpoints/${orders}`)).status, 200);
    assert.equal((await t.client.delete(`${t.base}/read-bindings/${bindingId}`)).status, 204);
    assert.equal((await t.client.delete(`/api/v1/data-endpoints/${orders}`)).status, 204);
  });

  it('reads a term’s records through its binding, mapped to term properties, with cursors', async () => {
    const id = await bind(t, customerBinding());
    const list = await t.client.get(`${t.base}/read-bindings?dataEndpointId=${customers}`);
    assert.equal(list.body.bindings.length, 1);
    assert.equal(list.body.bindings[0].status, 'active');
    const first = await t.client.get(`${t.base}/terms/Customer/records?limit=2`);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.deepEqual(first.body.data.map((r: Record<string, unknown>) => [r['@id'], r.name, r.age]), [
      ['https://example.com/customers/1', 'Ada', 36],
      ['https://example.com/customers/2', 'Bob', 17],
    ]);
    assert.ok(first.body.metadata.nextCursor);
    const second = await t.client.get(`${t.base}/terms/Customer/records?limit=2&cursor=${first.body.metadata.nextCursor}`);
    assert.deepEqual(second.body.data.map((r: Record<string, unknown>) => r['@id']), ['https://example.com/customers/3']);
    assert.equal(second.body.metadata.nextCursor, null);

    const blocked = await t.client.delete(`/api/v1/data-endpoints/${customers}`);
    assert.equal(blocked.status, 409, 'a binding blocks the deletion of its endpoint');
    assert.equal((await t.client.delete(`${t.base}/read-bindings/${id}`)).status, 204);
  });

  it('enforces a binding’s named read grants: data:read alone does not see its records', async () => {
    await bind(t, customerBinding({ requiredReadPermissions: ['customers.read'] }));
    const granted = await t.client.get(`${t.base}/terms/Customer/records`);
    assert.equal(granted.status, 200);
    assert.equal(granted.body.data.length, 3);
    const plain = as(await newKey(t.ws, { scopes: ['data:read', 'ontologies:read', 'queries:execute'] }));
    const refused = await plain.get(`${t.base}/terms/Customer/records`);
    assert.equal(refused.status, 403);
    assert.equal(refused.body.code, 'read_grant_required');
  });

  it('reports how the records conform to the term’s shapes', async () => {
    const report = await t.client.get(`${t.base}/terms/Customer/shape-check`);
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.equal(report.body.conforms, false);
    assert.equal(report.body.checkedRecords, 3);
    const problems = report.body.results.map((r: { focusNode: string; path: string; constraint: string }) => `${r.focusNode} ${r.path} ${r.constraint}`).sort();
    assert.deepEqual(problems, [
      'https://example.com/customers/2 age MinInclusiveConstraintComponent',
      'https://example.com/customers/3 name MinCountConstraintComponent',
    ]);
  });

  it('meters a shape check’s read like every other records read', async () => {
    const key = await newKey(t.ws, { scopes: ONTOLOGY_SCOPES, readPermissions: ['customers.read'] });
    const report = await as(key).get(`${t.base}/terms/Customer/shape-check`);
    assert.equal(report.status, 200, JSON.stringify(report.body));
    assert.ok(report.body.checkedRecords > 0, 'records were read');
    const keyId = await keyIdOf(key);
    const operations = await as(t.ws.apiKey).get('/api/v1/usage/operations?limit=100');
    assert.equal(operations.status, 200, JSON.stringify(operations.body));
    const reads = operations.body.operations.filter((o: { kind: string; apiKeyId: string }) => o.kind === 'records_read' && o.apiKeyId === keyId);
    assert.equal(reads.length, 1, JSON.stringify(operations.body.operations));
    assert.deepEqual(reads[0].quantities, { request: 1, record: report.body.checkedRecords });
    assert.equal(reads[0].projectId, t.ws.projectId);
  });
});
