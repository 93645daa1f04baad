import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PluginInstallation } from '../../db/models';
import { findCapability } from '../../plugins';
import { capabilityContext } from '../../services/endpoints/data-endpoints';
import { env } from '../support/environment';
import { as, newKey, request } from '../support/fixtures';
import { bind, customerOntology, OntologyTenant, ontologyTenant, seededTable } from '../support/ontology';
import { MAX_BOUND_RECORDS } from '../../services/ontology/sparql';

// The endpoint keeps a built dataset while the package, the bindings a key may read and their
// tables' snapshots are unchanged. These checks change each of those between queries and expect
// the next answer to follow, and two keys with different grants to keep their own answers.

describe('The SPARQL dataset kept between queries', function () {
  this.timeout(60_000);
  let t: OntologyTenant;
  let baseIri: string;
  let packageId: string;
  let customers: string;
  let bindingId: string;
  const table = `t_${randomUUID().replace(/-/g, '').slice(0, 12)}`;

  const write = async (rows: Array<Record<string, unknown>>, operation: 'append' | 'upsert' = 'append') => {
    const model = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
    await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().encryptionKey), { table, primaryKey: ['id'] }, { operation, rows, provenance: { kind: 'write', id: randomUUID() } });
  };
  const names = async (key: string) => {
    const query = `PREFIX : <${baseIri}> SELECT ?name WHERE { ?c a :Customer ; :name ?name } ORDER BY ?name`;
    const res = await request('GET', `${t.base}/sparql?query=${encodeURIComponent(query)}`, { key });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return (res.body.results.bindings as Array<{ name: { value: string } }>).map((b) => b.name.value);
  };

  before(async () => {
    t = await ontologyTenant();
    packageId = await customerOntology(t);
    baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
    const created = await t.client.post('/api/v1/data-endpoints', { name: table, namespace: 'ontology', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: t.managedInstallationId, target: { table, primaryKey: ['id'] } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    customers = created.body.dataEndpoint.id;
    await write([
      { id: 1, full_name: 'Ada', years: 36 },
      { id: 2, full_name: 'Bob', years: 52 },
    ]);
    bindingId = await bind(t, {
      ontologyPackageId: packageId,
      termId: 'Customer',
      dataEndpointId: customers,
      mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } },
      requiredReadPermissions: ['customers.read'],
    });
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
  });

  it('answers the same again, and follows each new snapshot of the bound table', async () => {
    assert.deepEqual(await names(t.key), ['Ada', 'Bob']);
    assert.deepEqual(await names(t.key), ['Ada', 'Bob'], 'the kept dataset answers alike');
    await write([{ id: 3, full_name: 'Cy', years: 30 }]);
    assert.deepEqual(await names(t.key), ['Ada', 'Bob', 'Cy'], 'a new snapshot is read');
    await write([{ id: 1, full_name: 'Ada L.', years: 36 }], 'upsert');
    assert.deepEqual(await names(t.key), ['Ada L.', 'Bob', 'Cy']);
  });

  it('keeps grants apart: a key without the binding’s grant never sees the kept records', async () => {
    const without = await newKey(t.ws, { scopes: ['sparql:query'] });
    assert.deepEqual(await names(t.key), ['Ada L.', 'Bob', 'Cy']);
    assert.deepEqual(await names(without), []);
    assert.deepEqual(await names(t.key), ['Ada L.', 'Bob', 'Cy']);
    assert.deepEqual(await names(without), []);
  });

  it('follows a changed mapping', async () => {
    const res = await t.client.put(`${t.base}/read-bindings/${bindingId}`, {
      ontologyPackageId: packageId,
      termId: 'Customer',
      dataEndpointId: customers,
      mapping: { subjectTemplate: 'https://example.com/people/{id}', properties: { name: 'full_name' } },
      requiredReadPermissions: ['customers.read'],
    });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const query = `PREFIX : <${baseIri}> SELECT ?c ?age WHERE { ?c a :Customer OPTIONAL { ?c :age ?age } } ORDER BY ?c`;
    const answer = await request('GET', `${t.base}/sparql?query=${encodeURIComponent(query)}`, { key: t.key });
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    const rows = answer.body.results.bindings as Array<{ c: { value: string }; age?: unknown }>;
    assert.deepEqual(rows.map((row) => row.c.value), ['https://example.com/people/1', 'https://example.com/people/2', 'https://example.com/people/3']);
    assert.ok(rows.every((row) => row.age === undefined), 'the unmapped property is gone');
  });
});

describe('The SPARQL dataset’s record bound', function () {
  this.timeout(240_000);
  let t: OntologyTenant;
  let baseIri: string;
  const orders = MAX_BOUND_RECORDS + 500;

  before(async () => {
    t = await ontologyTenant();
    const packageId = await customerOntology(t);
    baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
    const customers = await seededTable(t, [
      { id: 1, full_name: 'Ada', years: 36 },
      { id: 2, full_name: 'Bob', years: 52 },
      { id: 3, full_name: 'Cy', years: 30 },
    ]);
    // Read first (bindings are read in creation order), so the orders get a budget that is not a multiple of a page.
    await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name' } }, requiredReadPermissions: ['customers.read'] });
    const rows = Array.from({ length: orders }, (_, i) => ({ id: i + 1, amount: i % 1000 }));
    const table = await seededTable(t, rows.slice(0, 10_000));
    const endpoint = (await t.client.get(`/api/v1/data-endpoints/${table}`)).body.dataEndpoint;
    const model = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
    for (let i = 10_000; i < orders; i += 10_000) {
      await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().encryptionKey), endpoint.target, { operation: 'append', rows: rows.slice(i, i + 10_000), provenance: { kind: 'write', id: randomUUID() } });
    }
    await bind(t, { ontologyPackageId: packageId, termId: 'Order', dataEndpointId: table, mapping: { subjectTemplate: 'https://example.com/orders/{id}', properties: { total: 'amount' } } });
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
  });

  const countOrders = async (key: string) => {
    const query = `PREFIX : <${baseIri}> SELECT (COUNT(?o) AS ?n) WHERE { ?o a :Order }`;
    const res = await request('POST', `${t.base}/sparql`, { key, rawBody: query, headers: { 'Content-Type': 'application/sparql-query' } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return { orders: Number(res.body.results.bindings[0].n.value), truncated: res.headers.get('weft-dataset-truncated') };
  };

  it('maps at most the bound, says so, and keeps to it when the dataset is kept', async () => {
    // 3 customers first, then orders up to the bound: the last page is cut, not asked for with another size.
    assert.deepEqual(await countOrders(t.key), { orders: MAX_BOUND_RECORDS - 3, truncated: 'true' });
    assert.deepEqual(await countOrders(t.key), { orders: MAX_BOUND_RECORDS - 3, truncated: 'true' }, 'the same from what was kept');
    // A key without the customers’ grant: the orders have the whole budget.
    const other = await newKey(t.ws, { scopes: ['sparql:query'] });
    assert.deepEqual(await countOrders(other), { orders: MAX_BOUND_RECORDS, truncated: 'true' });
    assert.deepEqual(await countOrders(t.key), { orders: MAX_BOUND_RECORDS - 3, truncated: 'true' });
  });
});
