import assert from 'node:assert/strict';
import fc from 'fast-check';
import type pg from 'pg';
import { installPlugin } from '../../../services/endpoints/plugins';
import { env } from '../../support/environment';
import { externalDatabase, installationSettingsFor } from '../../support/external-postgres';
import { as, newKey, request } from '../../support/fixtures';
import { activeOntology, bind, ONTOLOGY_SCOPES, OntologyTenant, ontologyTenant, overrideSparqlSettings, seededTable } from '../../support/ontology';
import { scrape, total } from '../../support/prometheus';
import { choices, generatedQuery, Picks } from '../../support/sparql-generated-queries';

// SPARQL over bound tables of different databases (services/ontology/sparql-reach-reads.ts with
// sparql-external-sql.ts's externalRecords): customers in one external PostgreSQL, their orders in
// a managed table (one workspace) or in a second external database through a second installation
// (another). Each database's reads find the records the query reaches, narrowed by the values the
// other's gave, and Weft joins them: every answer equals the evaluator's over the tables read
// whole, the reads stay under what the whole tables hold, the dataset bound does not apply, the
// reach bound does, live tables are read again by each query, and the data guard still decides.

const CUSTOMERS_DATABASE = `weft_sparql_across_a_${process.pid}`;
const ORDERS_DATABASE = `weft_sparql_across_b_${process.pid}`;
const SEED = Number(process.env.SPARQL_ACROSS_SEED ?? 20261207);
const RUNS = Number(process.env.SPARQL_ACROSS_RUNS ?? 40);

// Integer keys, a NULL name, a name of two cases, an age shared by two customers.
const CUSTOMERS = `
  CREATE TABLE customers (id integer PRIMARY KEY, full_name text, years integer);
  INSERT INTO customers VALUES (1, 'Ada', 36), (2, 'Bob', 41), (3, 'Émile', NULL), (4, 'Zoë', 30), (5, NULL, 36), (6, '𝒜', 12), (7, 'ada', 5);`;
// No primary key: two rows share an id; ids needing percent-encoding; a NULL link.
const ORDERS = `
  CREATE TABLE orders (id text, amount numeric, customer integer);
  INSERT INTO orders VALUES ('1', 10, 1), ('1', 12, 1), ('2', 5.5, 2), ('a b', NULL, 3), ('', 1, 1), ('x/é', 0.1, 9), ('3', 30, 4), ('4', 2.50, NULL), ('5', 36, 7);`;
// The managed table's orders: numbers and their strings, arrays of totals and of customers, a missing link.
const MANAGED_ORDERS = [
  { id: '1', amount: 10, customer: 1 },
  { id: 'a b', amount: 2.5, customer: '2' },
  { id: '2', amount: '5', customer: 1 },
  { id: '4', amount: [5, 36], customer: [1, 2] },
  { id: '5', amount: null, customer: 3 },
  { id: 6, amount: 0.1, customer: 9 },
  { id: '7', amount: 30, customer: 5 },
  { id: '8', amount: 12 },
];

const TERMS = [
  { id: 'Customer', kind: 'class' },
  { id: 'Order', kind: 'class' },
  { id: 'name', kind: 'property', domain: 'Customer', datatype: 'xsd:string' },
  { id: 'age', kind: 'property', domain: 'Customer', datatype: 'xsd:integer' },
  { id: 'total', kind: 'property', domain: 'Order', datatype: 'xsd:decimal' },
];
const LINKS = [{ id: 'placedBy', from: 'Order', to: 'Customer' }];
const CUSTOMER_MAPPING = { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } };
const ORDER_MAPPING = { subjectTemplate: 'https://example.com/orders/{id}', properties: { total: 'amount' }, links: { placedBy: { field: 'customer', targetTemplate: 'https://example.com/customers/{customer}' } } };

interface Answer {
  status: number;
  code?: string;
  rows: string[];
  triples: number;
  version: string | null;
  withheld: string | null;
}

describe('SPARQL over bound tables of different databases, joined by Weft', function () {
  this.timeout(300_000);
  let customersDb: { client: pg.Client; drop(): Promise<void> };
  let ordersDb: { client: pg.Client; drop(): Promise<void> };
  let restoreSettings: () => void;
  /** Customers external, orders in a managed table. */
  let mixed: OntologyTenant & { baseIri: string; unguarded: string };
  /** Customers and orders in two external databases. */
  let twoInstallations: OntologyTenant & { baseIri: string };

  async function tenant(orders: 'managed' | 'external'): Promise<OntologyTenant & { baseIri: string }> {
    const t = await ontologyTenant();
    const packageId = await activeOntology(t, { terms: TERMS, links: LINKS });
    const endpoint = async (database: string, name: string) => {
      const installation = await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', installationSettingsFor(database));
      const res = await t.client.post('/api/v1/data-endpoints', { name: `${name}-${process.pid}`, namespace: 'external', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: installation.id, target: { table: name } });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.dataEndpoint.id as string;
    };
    // The customers' grant: a key without customers.read reads the orders alone.
    await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: await endpoint(CUSTOMERS_DATABASE, 'customers'), mapping: CUSTOMER_MAPPING, requiredReadPermissions: ['customers.read'] });
    const orderEndpoint = orders === 'managed' ? await seededTable(t, MANAGED_ORDERS) : await endpoint(ORDERS_DATABASE, 'orders');
    await bind(t, { ontologyPackageId: packageId, termId: 'Order', dataEndpointId: orderEndpoint, mapping: ORDER_MAPPING });
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
    return { ...t, baseIri: (await t.client.get(t.base)).body.ontology.baseIri };
  }

  before(async () => {
    // A whole graph is never kept for the next query, and PostgreSQL answers whatever the tables' size.
    restoreSettings = overrideSparqlSettings({ sqlMinRecords: 0, unpinnedTtlSeconds: 0 });
    customersDb = await externalDatabase(CUSTOMERS_DATABASE);
    await customersDb.client.query(CUSTOMERS);
    ordersDb = await externalDatabase(ORDERS_DATABASE);
    await ordersDb.client.query(ORDERS);
    const first = await tenant('managed');
    mixed = { ...first, unguarded: await newKey(first.ws, { scopes: ONTOLOGY_SCOPES, readPermissions: [] }) };
    twoInstallations = await tenant('external');
  });
  after(async () => {
    restoreSettings?.();
    await customersDb?.drop();
    await ordersDb?.drop();
  });

  async function ask(t: OntologyTenant & { baseIri: string }, body: string, ordered = false, key = t.key): Promise<Answer> {
    const res = await request('POST', `${t.base}/sparql`, { key, rawBody: `PREFIX : <${t.baseIri}>\n${body}`, headers: { 'Content-Type': 'application/sparql-query' } });
    const headers = { triples: Number(res.headers.get('weft-dataset-triples')), version: res.headers.get('weft-dataset-version'), withheld: res.headers.get('weft-withheld-bindings') };
    if (res.status !== 200) return { status: res.status, code: res.body?.code, rows: [], ...headers };
    const rows = typeof res.body.boolean === 'boolean' ? [String(res.body.boolean)] : (res.body.results.bindings as Array<Record<string, unknown>>).map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).sort())));
    return { status: 200, rows: ordered ? rows : rows.sort(), ...headers };
  }
  /** The answer read per query, and the evaluator's over every table read whole. */
  async function both(t: OntologyTenant & { baseIri: string }, body: string, ordered = false, key = t.key) {
    const perQuery = await ask(t, body, ordered, key);
    const restore = overrideSparqlSettings({ tableReads: 'whole' });
    try {
      return { perQuery, whole: await ask(t, body, ordered, key) };
    } finally {
      restore();
    }
  }
  async function same(t: OntologyTenant & { baseIri: string }, body: string, ordered = false, key = t.key) {
    const answers = await both(t, body, ordered, key);
    assert.equal(answers.perQuery.status, 200, `${body}: ${answers.perQuery.code}`);
    assert.equal(answers.whole.status, 200, `${body} read whole: ${answers.whole.code}`);
    assert.deepEqual(answers.perQuery.rows, answers.whole.rows, body);
    return answers;
  }

  const QUERIES = [
    'SELECT ?o ?c ?name WHERE { ?o :placedBy ?c . ?c :name ?name }',
    'SELECT ?o ?t WHERE { ?o :placedBy ?c ; :total ?t . ?c :name "Ada" }',
    'SELECT ?name (COUNT(?o) AS ?n) (SUM(?t) AS ?s) WHERE { ?o :placedBy ?c ; :total ?t . ?c :name ?name } GROUP BY ?name',
    'SELECT ?o WHERE { ?o :placedBy ?c FILTER NOT EXISTS { ?c :age ?age FILTER (?age > 35) } }',
    'SELECT ?c ?o WHERE { ?c :age ?a FILTER (?a >= 36) OPTIONAL { ?o :placedBy ?c } }',
    'SELECT ?name ?t WHERE { ?o :total ?t FILTER (?t > 5) . ?o :placedBy ?c . ?c :name ?name }',
    'SELECT ?c WHERE { ?c a :Customer MINUS { ?o :placedBy ?c } }',
    'SELECT ?n ?o WHERE { <https://example.com/customers/1> :name ?n . ?o :placedBy <https://example.com/customers/1> }',
    'SELECT ?o ?age WHERE { ?o :placedBy ?c . ?c :age ?age FILTER (?age IN (36, 41)) } ORDER BY ?o ?age',
    'SELECT ?name WHERE { ?c :name ?name FILTER EXISTS { ?o :placedBy ?c ; :total 36 } }',
    'ASK { ?o :placedBy ?c . ?c :age 41 }',
    'ASK { ?o :placedBy ?c . ?c :age 99 }',
  ];

  for (const [label, which] of [['customers external, orders managed', () => mixed], ['customers and orders in two installations', () => twoInstallations]] as const) {
    describe(label, () => {
      for (const query of QUERIES) it(query, () => same(which(), query, query.includes('ORDER BY')).then(() => undefined));

      it('answers generated queries over both tables (FILTER, OPTIONAL, VALUES, UNION, BIND, MINUS, (NOT) EXISTS, subqueries) as over the tables read whole', async function () {
        this.timeout(600_000);
        await fc.assert(
          fc.asyncProperty(choices, async (numbers) => {
            const query = generatedQuery(new Picks(numbers));
            await same(which(), query.text, query.ordered);
          }),
          { seed: SEED, numRuns: RUNS },
        );
      });

      /** The package's triples: what a query that reaches no table is answered over. */
      const packageTriples = async () => (await ask(which(), 'SELECT ?s WHERE { ?s :nothing ?o }')).triples;

      it("reads the records the other database's values reach, not the whole tables", async () => {
        const { perQuery, whole } = await same(which(), 'SELECT ?o ?t WHERE { ?o :placedBy ?c ; :total ?t . ?c :name "Ada" }');
        assert.ok(perQuery.rows.length > 0);
        const [read, tables] = [perQuery.triples - (await packageTriples()), whole.triples - (await packageTriples())];
        // Customer 1 (its type and two properties) and the orders placed by it; the whole tables hold every customer and order.
        assert.ok(read > 0 && read < tables / 2, `${read} triples of the tables read, ${tables} whole`);
      });

      it('answers past the dataset bound, which the whole read refuses, and refuses past the reach bound', async () => {
        const narrowed = 'SELECT ?o WHERE { ?o :placedBy ?c . ?c :name "Bob" }';
        // Room for the package and for less than both tables.
        const restore = overrideSparqlSettings({ maxDatasetTriples: (await packageTriples()) + 10 });
        try {
          const { perQuery, whole } = await both(which(), narrowed);
          assert.equal(perQuery.status, 200, perQuery.code);
          assert.ok(perQuery.rows.length > 0);
          assert.deepEqual([whole.status, whole.code], [422, 'dataset_too_large']);
        } finally {
          restore();
        }
        // Under the customers' 19 triples, over one customer's with its orders (6 or 11).
        const reach = overrideSparqlSettings({ maxReachedTriples: 15 });
        try {
          const broad = await ask(which(), 'SELECT ?o ?name WHERE { ?o :placedBy ?c . ?c :name ?name }');
          assert.deepEqual([broad.status, broad.code], [422, 'query_too_broad']);
          assert.equal((await ask(which(), narrowed)).status, 200, 'a narrowed query stays under it');
        } finally {
          reach();
        }
      });

      it("reads an external table every record of which a query may reach in the query's session, and refuses one past the reach bound before a row is sent", async () => {
        // REGEX is not one PostgreSQL answers: the evaluator answers it over the customers read.
        const query = 'SELECT ?c ?name WHERE { ?c :name ?name FILTER (REGEX(?name, "^[A-Z]")) }';
        const recordsRead = async <T>(work: () => Promise<T>) => {
          const before = (await scrape(env().metricsUrl)).samples;
          const result = await work();
          const after = (await scrape(env().metricsUrl)).samples;
          const moved = (read: string) => total(after, 'weft_sparql_records_read_total', { read }) - total(before, 'weft_sparql_records_read_total', { read });
          return { result, perQuery: moved('per_query'), whole: moved('whole') };
        };
        const customers = Number((await customersDb.client.query<{ n: string }>('SELECT count(*) AS n FROM customers')).rows[0].n);
        const answered = await recordsRead(() => ask(which(), query));
        assert.equal(answered.result.status, 200, answered.result.code);
        assert.equal(answered.whole, 0, 'not through the capability\'s pages');
        assert.equal(answered.perQuery, customers, 'every customer, once, in the query\'s read');
        await same(which(), query);
        const reach = overrideSparqlSettings({ maxReachedTriples: customers - 1 });
        try {
          const refused = await recordsRead(() => ask(which(), query));
          assert.deepEqual([refused.result.status, refused.result.code], [422, 'query_too_broad']);
          assert.deepEqual([refused.perQuery, refused.whole], [0, 0], 'refused from the count, no record read');
        } finally {
          reach();
        }
      });

      it('reads the live external table again for each query', async () => {
        const query = 'SELECT ?o WHERE { ?o :placedBy ?c . ?c :age 77 }';
        const before = await same(which(), query);
        assert.deepEqual(before.perQuery.rows, []);
        await customersDb.client.query('UPDATE customers SET years = 77 WHERE id = 2');
        try {
          const after = await same(which(), query);
          assert.ok(after.perQuery.rows.length > 0, 'the changed row is in the next answer');
        } finally {
          await customersDb.client.query('UPDATE customers SET years = 41 WHERE id = 2');
        }
      });
    });
  }

  it('leaves out the bindings a key may not read: the orders alone, as over the tables read whole', async () => {
    const query = 'SELECT ?o ?c ?name WHERE { ?o :placedBy ?c OPTIONAL { ?c :name ?name } }';
    const { perQuery } = await same(mixed, query, false, mixed.unguarded);
    assert.equal(perQuery.withheld, '1');
    assert.ok(perQuery.rows.length > 0);
    assert.ok(perQuery.rows.every((row) => !row.includes('"name"')), 'no customer name is read');
    const granted = await same(mixed, query);
    assert.equal(granted.perQuery.withheld, null);
    assert.ok(granted.perQuery.rows.some((row) => row.includes('"name"')));
  });

  it('reads no external table a query cannot reach: its reads of the managed table are kept for the next query', async () => {
    // REGEX is not one the SQL path takes: the evaluator answers it over the records read.
    const query = 'SELECT ?o ?t WHERE { ?o :total ?t FILTER (REGEX(STR(?o), "orders/[0-9]")) }';
    const first = await same(mixed, query);
    assert.ok(first.perQuery.triples > 0, 'answered over records read into the API');
    const again = await ask(mixed, query);
    assert.equal(again.version, first.perQuery.version, 'the same data, under the same version: nothing live was read');
  });

  it('answers a query over the managed table alone in PostgreSQL, beside an external binding', async () => {
    const { perQuery } = await same(mixed, 'SELECT ?o ?t WHERE { ?o :total ?t FILTER (?t > 5) }');
    assert.equal(perQuery.triples, 0, 'no triple read into the API');
  });
});
