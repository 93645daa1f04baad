import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PluginInstallation } from '../../../db/models';
import { findCapability } from '../../../plugins';
import { capabilityContext } from '../../../services/endpoints/data-endpoints';
import { env } from '../../support/environment';
import { within } from '../../support/polling';
import { as, newKey, request } from '../../support/fixtures';
import { bind, customerOntology, OntologyTenant, ontologyTenant, overrideSparqlSettings, seededTable } from '../../support/ontology';
import type { Knex } from 'knex';
import type pg from 'pg';
import { SNAPSHOT_NOTICE_CHANNEL, snapshotScope } from '../../../plugins/snapshot-notices';

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
    await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().dependencies()), { table, primaryKey: ['id'] }, { operation, rows, provenance: { kind: 'write', id: randomUUID() } });
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

  it('knows the snapshots without asking per query: every commit is announced to every process, and one in a caller’s transaction counts once it commits', async () => {
    // Other processes learn of a commit from its NOTIFY on the definitions channel.
    const listener = (await (env().db.client as Knex.Client).acquireRawConnection()) as pg.Client;
    try {
      const heard: string[] = [];
      listener.on('notification', (message) => heard.push(message.payload ?? ''));
      await listener.query(`LISTEN ${SNAPSHOT_NOTICE_CHANNEL}`);
      await write([{ id: 4, full_name: 'Dee', years: 41 }]);
      const scope = snapshotScope(t.ws.workspaceId);
      await within(5_000, () => heard.includes(scope), Boolean, 20);
      assert.ok(heard.includes(scope), `the commit announced ${scope} (heard ${JSON.stringify(heard)})`);
    } finally {
      await listener.end();
    }
    assert.deepEqual(await names(t.key), ['Ada L.', 'Bob', 'Cy', 'Dee']);
    // A write inside a caller's transaction: the kept snapshot stays until that transaction commits.
    const model = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
    await env().db.transaction(async (trx) => {
      await findCapability('managed_table').writeRecords!(capabilityContext(trx, model, env().dependencies()), { table, primaryKey: ['id'] }, { operation: 'append', rows: [{ id: 5, full_name: 'Eve', years: 29 }], provenance: { kind: 'write', id: randomUUID() } });
      assert.deepEqual(await names(t.key), ['Ada L.', 'Bob', 'Cy', 'Dee'], 'uncommitted data is not read');
    });
    assert.deepEqual(await names(t.key), ['Ada L.', 'Bob', 'Cy', 'Dee', 'Eve'], 'the committed snapshot is read');
  });
});

describe('The SPARQL dataset at the scale of its data', function () {
  this.timeout(240_000);
  let t: OntologyTenant;
  let baseIri: string;
  let ordersTable: string;
  // More than the 50,000 records a query used to be cut to.
  const orders = 60_500;

  before(async () => {
    t = await ontologyTenant();
    const packageId = await customerOntology(t);
    baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
    const customers = await seededTable(t, [
      { id: 1, full_name: 'Ada', years: 36 },
      { id: 2, full_name: 'Bob', years: 52 },
      { id: 3, full_name: 'Cy', years: 30 },
    ]);
    await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name' } }, requiredReadPermissions: ['customers.read'] });
    const rows = Array.from({ length: orders }, (_, i) => ({ id: i + 1, amount: i % 1000 }));
    ordersTable = await seededTable(t, rows.slice(0, 10_000));
    for (let i = 10_000; i < orders; i += 10_000) await appendRows(rows.slice(i, i + 10_000));
    await bind(t, { ontologyPackageId: packageId, termId: 'Order', dataEndpointId: ordersTable, mapping: { subjectTemplate: 'https://example.com/orders/{id}', properties: { total: 'amount' } } });
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
  });

  async function appendRows(rows: Array<Record<string, unknown>>): Promise<void> {
    const endpoint = (await t.client.get(`/api/v1/data-endpoints/${ordersTable}`)).body.dataEndpoint;
    const model = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
    await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().dependencies()), endpoint.target, { operation: 'append', rows, provenance: { kind: 'write', id: randomUUID() } });
  }

  /** `variant` makes another text of the same query: a text already answered over the same data reads nothing again. */
  const count = async (key: string, variant = '', filter = '') => {
    const query = `PREFIX : <${baseIri}> SELECT (COUNT(?o) AS ?n) (SUM(?total) AS ?sum) WHERE { ?o a :Order ; :total ?total ${filter}}${variant}`;
    const res = await request('POST', `${t.base}/sparql`, { key, rawBody: query, headers: { 'Content-Type': 'application/sparql-query' } });
    return { status: res.status, body: res.body, version: res.headers.get('weft-dataset-version'), triples: Number(res.headers.get('weft-dataset-triples')), truncated: res.headers.get('weft-dataset-truncated'), serverTiming: res.headers.get('server-timing') };
  };
  // Σ (i mod 1000) over i < orders.
  const expectedSum = (n: number) => Array.from({ length: n }, (_, i) => i % 1000).reduce((a, b) => a + b, 0);

  it('answers over every record, names the data version it used, and keeps it until the data changes', async () => {
    const first = await count(t.key);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(Number(first.body.results.bindings[0].n.value), orders);
    assert.equal(Number(first.body.results.bindings[0].sum.value), expectedSum(orders));
    assert.equal(first.truncated, null, 'no answer over part of the data');
    assert.match(first.version ?? '', /^[\w-]{22}$/);
    // The query thread's share of the time, for clients' and the bench's timing breakdowns.
    assert.match(first.serverTiming ?? '', /^evaluation;dur=\d+\.\d{2}, serialization;dur=\d+\.\d{2}$/);
    const again = await count(t.key);
    assert.equal(again.version, first.version, 'the same data, the same version');
    // A key without the customers’ grant selects fewer graphs of the same kept data.
    const other = await newKey(t.ws, { scopes: ['sparql:query'] });
    const narrower = await count(other);
    assert.equal(Number(narrower.body.results.bindings[0].n.value), orders);
    assert.notEqual(narrower.version, first.version, 'another set of bindings, another dataset version');
    // Bound tables are read per query: both keys' answers read the orders, and only the orders.
    assert.equal(narrower.triples, first.triples);
    await appendRows([{ id: orders + 1, amount: 7 }]);
    const after = await count(t.key);
    assert.equal(Number(after.body.results.bindings[0].n.value), orders + 1, 'a new snapshot is read');
    assert.notEqual(after.version, first.version);
  });

  it('answers over bound tables whatever the dataset bound, which only whole graphs count toward', async () => {
    const expected = (await count(t.key)).body.results.bindings[0].n.value;
    const restore = overrideSparqlSettings({ maxDatasetTriples: 1_000 });
    try {
      const answered = await count(t.key, ' # read again');
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      assert.equal(answered.body.results.bindings[0].n.value, expected);
    } finally {
      restore();
    }
  });

  it('refuses a query that reaches past the reach bound at the first read past it, naming the bound and the table, never a part', async () => {
    const restore = overrideSparqlSettings({ maxReachedTriples: 1_000 });
    try {
      // A FILTER PostgreSQL does not apply keeps the count from its counting (sparql-in-sql.test.ts): the records are read.
      const refused = await count(t.key, ' # under a lower reach bound', 'FILTER (STRLEN(STR(?total)) > 0) ');
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body.code, 'query_too_broad');
      assert.equal(refused.body.maxReachedTriples, 1_000);
      assert.equal(refused.body.table, (await t.client.get(`/api/v1/data-endpoints/${ordersTable}`)).body.dataEndpoint.target.table, 'the table read past the bound');
      assert.match(refused.body.message, /1,000 triples/);
      // A query whose constants reach one record is answered under the same bound.
      const one = await request('POST', `${t.base}/sparql`, { key: t.key, rawBody: `PREFIX : <${baseIri}> SELECT ?total WHERE { <https://example.com/orders/17> :total ?total }`, headers: { 'Content-Type': 'application/sparql-query' } });
      assert.equal(one.status, 200, JSON.stringify(one.body));
      assert.deepEqual(one.body.results.bindings.map((row: { total: { value: string } }) => row.total.value), ['16']);
      assert.equal(Number(one.headers.get('weft-dataset-triples')) < 100, true, 'only the record the query reaches is read');
    } finally {
      restore();
    }
    assert.equal((await count(t.key)).status, 200);
  });

  it('stops a table read at the query’s time limit with 422 query_timeout, whether PostgreSQL answers or reads records', async () => {
    const restore = overrideSparqlSettings({ timeoutMs: 1 });
    try {
      for (const [variant, filter] of [[' # counted, timed out', ''], [' # read, timed out', 'FILTER (STRLEN(STR(?total)) > 0) ']]) {
        const stopped = await count(t.key, variant, filter);
        assert.equal(stopped.status, 422, JSON.stringify(stopped.body));
        assert.equal(stopped.body.code, 'query_timeout');
      }
    } finally {
      restore();
    }
  });

  it('refuses a dataset past the configured bound with a 4xx naming the bound and the size, never a part, when tables are read whole', async () => {
    const whole = overrideSparqlSettings({ tableReads: 'whole' });
    try {
      const total = (await count(t.key)).triples;
      const restore = overrideSparqlSettings({ maxDatasetTriples: total - 1 });
      try {
        const refused = await count(t.key);
        assert.equal(refused.status, 422, JSON.stringify(refused.body));
        assert.equal(refused.body.code, 'dataset_too_large');
        assert.equal(refused.body.maxDatasetTriples, total - 1);
        assert.equal(refused.body.datasetTriples, total);
        assert.match(refused.body.message, new RegExp(`${(total - 1).toLocaleString('en')}`));
      } finally {
        restore();
      }
      assert.equal((await count(t.key)).status, 200);
    } finally {
      whole();
    }
  });
});
