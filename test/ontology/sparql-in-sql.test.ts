import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PluginInstallation } from '../../db/models';
import { findCapability } from '../../plugins';
import { capabilityContext } from '../../services/endpoints/data-endpoints';
import { overrideSparqlSettings } from '../../ontology/sparql-threads/settings';
import { env } from '../support/environment';
import { as, request } from '../support/fixtures';
import { bind, customerOntology, OntologyTenant, ontologyTenant, seededTable } from '../support/ontology';

// Counting queries over one bound table are answered by PostgreSQL (services/ontology/
// sparql-in-sql.ts): the same answers as the evaluator gives over the table read whole,
// on data made to trip a count in SQL (records sharing a subject IRI, arrays with repeats, 5 and
// "5", JSON null, missing fields, keys that need percent-encoding), and a count no bound refuses.

/** The records of each run: made to trip a count in SQL, or keyed and scalar (one scan a star), or keyed by ids of two JSON types. */
const DATASETS: Array<{ name: string; customers: Array<Record<string, unknown>>; customerKey: string[] | null; orders: Array<Record<string, unknown>>; orderKey: string[] | null }> = [
  {
    name: 'records sharing subjects, arrays with repeats, 5 and "5", JSON null, missing fields',
    customers: [
      { id: 1, full_name: 'Ada', years: 36 },
      { id: 2, full_name: 'Bob', years: 36 },
      { id: 3, full_name: 'Cy', years: [30, 30, '31'] },
      { id: 4, full_name: 'Di' },
    ],
    customerKey: ['id'],
    // No primary key: two records may share an id, and so a subject.
    orders: [
      { id: 1, amount: 10, customer: 1 },
      { id: 1, amount: 12, customer: 1 },
      { id: 2, amount: [5, 5, '5', 7], customer: [1, 2] },
      { id: '3', amount: null, customer: 2 },
      { id: 4, customer: 3 },
      { id: '', amount: 1 },
      { id: 5, amount: 'abc', customer: 'x y/é' },
      { id: 6, amount: 2.5, customer: null },
      { id: 7, amount: true, customer: '1' },
      { id: 8, amount: [null, 3], customer: [] },
      { id: 'a b', amount: 0.1, customer: 4 },
    ],
    orderKey: null,
  },
  {
    // Keyed by the subject field, no arrays: each star is read in one scan, a record a row.
    name: 'tables keyed by their subject field, scalar values',
    customers: [
      { id: 1, full_name: 'Ada', years: 36 },
      { id: 2, full_name: 'Bob', years: 36 },
      { id: 3, full_name: 'Cy', years: '31' },
      { id: 4, full_name: 'Di' },
      { id: 5, years: 30 },
    ],
    customerKey: ['id'],
    orders: [
      { id: 1, amount: 10, customer: 1 },
      { id: 2, amount: 12, customer: 1 },
      { id: 3, amount: '5', customer: 2 },
      { id: 4, amount: null, customer: 2 },
      { id: 5, customer: 3 },
      { id: 6, amount: 'abc', customer: 'x y/é' },
      { id: 7, amount: 2.5, customer: null },
      { id: 8, amount: true, customer: '1' },
      { id: 9, amount: 0.1, customer: 4 },
      { id: 10, amount: 7, customer: 5 },
    ],
    orderKey: ['id'],
  },
  {
    // Keyed, but 2 and "2" are two records with one subject IRI: one scan would count them twice.
    name: 'tables keyed by ids of two JSON types',
    customers: [
      { id: 1, full_name: 'Ada', years: 36 },
      { id: '1', full_name: 'Ada Lovelace', years: 37 },
      { id: 2, full_name: 'Bob', years: 36 },
    ],
    customerKey: ['id'],
    orders: [
      { id: 1, amount: 10, customer: 1 },
      { id: '1', amount: 12, customer: '1' },
      { id: 2, amount: 5, customer: 2 },
      { id: 3, amount: 7, customer: 2 },
      { id: 4, amount: 'abc', customer: 2 },
    ],
    orderKey: ['id'],
  },
];

for (const dataset of DATASETS) describe(`Counts over bound tables, answered by PostgreSQL: ${dataset.name}`, function () {
  this.timeout(120_000);
  let t: OntologyTenant;
  let baseIri: string;
  let orders: string;

  // PostgreSQL answers here whatever the tables' size (small ones are otherwise the evaluator's).
  let restoreSettings: () => void;
  before(() => {
    restoreSettings = overrideSparqlSettings({ sqlMinRecords: 0 });
  });
  after(() => restoreSettings());

  before(async () => {
    t = await ontologyTenant();
    const packageId = await customerOntology(t);
    baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
    const customers = await seededTable(t, dataset.customers, dataset.customerKey);
    orders = await seededTable(t, dataset.orders, dataset.orderKey);
    await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } } });
    await bind(t, { ontologyPackageId: packageId, termId: 'Order', dataEndpointId: orders, mapping: { subjectTemplate: 'https://example.com/orders/{id}', properties: { total: 'amount' }, links: { placedBy: { field: 'customer', targetTemplate: 'https://example.com/customers/{customer}' } } } });
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
  });

  /** The rows as JSON texts, sorted unless the query's ORDER BY orders them completely (`ordered`). */
  const ask = async (body: string, ordered = false) => {
    const res = await request('POST', `${t.base}/sparql`, { key: t.key, rawBody: `PREFIX : <${baseIri}>\n${body}`, headers: { 'Content-Type': 'application/sparql-query' } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const rows = (res.body.results.bindings as Array<Record<string, unknown>>).map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).sort())));
    return { rows: ordered ? rows : rows.sort(), triples: Number(res.headers.get('weft-dataset-triples')) };
  };
  /** The answer by PostgreSQL's count, and the evaluator's over the tables read whole. */
  const both = async (body: string, ordered = false) => {
    const counted = await ask(body, ordered);
    const whole = overrideSparqlSettings({ tableReads: 'whole' });
    try {
      return { counted, whole: await ask(`${body}\n# read whole`, ordered) };
    } finally {
      whole();
    }
  };

  const COUNTS = [
    'SELECT (COUNT(*) AS ?n) WHERE { ?o a :Order ; :total ?t }',
    'SELECT (COUNT(*) AS ?n) WHERE { ?o a :Order }',
    'SELECT (COUNT(?t) AS ?n) (COUNT(DISTINCT ?t) AS ?d) WHERE { ?o :total ?t }',
    'SELECT ?t (COUNT(*) AS ?n) WHERE { ?o :total ?t } GROUP BY ?t',
    'SELECT ?c (COUNT(?o) AS ?n) (COUNT(DISTINCT ?t) AS ?d) WHERE { ?o :total ?t ; :placedBy ?c } GROUP BY ?c',
    'SELECT (COUNT(DISTINCT *) AS ?n) (COUNT(DISTINCT ?o) AS ?s) WHERE { ?o :total ?t ; :placedBy ?c }',
    'SELECT ?age (COUNT(*) AS ?n) WHERE { ?c a :Customer ; :age ?age ; :name ?name } GROUP BY ?age',
    'SELECT (COUNT(*) AS ?n) WHERE { ?c a :Customer ; :age ?age ; :name ?name ; :age ?again }',
    'SELECT (SUM(?age) AS ?s) (AVG(?age) AS ?a) (COUNT(*) AS ?n) WHERE { ?c :age ?age }',
    'SELECT ?name (SUM(?age) AS ?s) (AVG(?age) AS ?a) WHERE { ?c :name ?name ; :age ?age } GROUP BY ?name',
    // Two tables joined through a link whose template is the other's subject template.
    'SELECT (COUNT(*) AS ?n) WHERE { ?o :placedBy ?c . ?c :name ?name }',
    'SELECT ?c (COUNT(*) AS ?n) (COUNT(DISTINCT ?o) AS ?orders) WHERE { ?o a :Order ; :placedBy ?c ; :total ?t . ?c :name ?name } GROUP BY ?c',
    'SELECT ?name (COUNT(?t) AS ?n) (SUM(?age) AS ?s) (AVG(?age) AS ?a) WHERE { ?o :placedBy ?c ; :total ?t . ?c a :Customer ; :name ?name ; :age ?age } GROUP BY ?name',
    // Without aggregates: the solutions, as a multiset or DISTINCT, with numeric FILTERs.
    'SELECT ?c WHERE { ?o :placedBy ?c . ?c :name ?n }',
    'SELECT DISTINCT ?t WHERE { ?o :total ?t FILTER (?t != 5) }',
    'SELECT ?o ?t WHERE { ?o :total ?t FILTER (?t > 2 && ?t <= 10.5) }',
    'SELECT (COUNT(*) AS ?n) WHERE { ?o :total ?t FILTER (4 < ?t) }',
  ];

  for (const query of COUNTS) {
    it(`answers ${query} in PostgreSQL as the evaluator does over the whole table`, async () => {
      const { counted, whole } = await both(query);
      assert.deepEqual(counted.rows, whole.rows);
      assert.equal(counted.triples, 0, 'counted by PostgreSQL: no triple was read into the API');
      assert.ok(whole.triples > 0);
    });
  }

  it('orders, offsets and limits the counted groups in the evaluator’s order', async () => {
    for (const query of [
      'SELECT ?age (COUNT(*) AS ?n) WHERE { ?c :age ?age } GROUP BY ?age ORDER BY DESC(?n) ?age',
      'SELECT ?age (COUNT(*) AS ?n) WHERE { ?c :age ?age } GROUP BY ?age ORDER BY ?age LIMIT 2 OFFSET 1',
      'SELECT ?c (COUNT(*) AS ?n) WHERE { ?o :placedBy ?c . ?c :name ?name } GROUP BY ?c ORDER BY DESC(?c)',
      'SELECT ?name (AVG(?age) AS ?a) WHERE { ?c :name ?name ; :age ?age } GROUP BY ?name ORDER BY DESC(?a) ?name LIMIT 2',
      'SELECT DISTINCT ?c ?name WHERE { ?o :placedBy ?c ; :total ?t . ?c :name ?name FILTER (?t > 4) } ORDER BY ?name ?c LIMIT 2',
      'SELECT ?name ?age WHERE { ?c :name ?name ; :age ?age FILTER (?age >= 31) } ORDER BY ?age ?name OFFSET 1',
    ]) {
      const { counted, whole } = await both(query, true);
      assert.deepEqual(counted.rows, whole.rows, query);
      assert.equal(counted.triples, 0, query);
    }
  });

  it('evaluates as before what it does not count (a FILTER, an invalid SUM, a join on a literal, a constant), with the same answers', async () => {
    for (const query of [
      'SELECT (COUNT(*) AS ?n) WHERE { ?o :total ?t FILTER (?t > 4 || ?t < 1) }',
      'SELECT ?o WHERE { ?o :total ?t } LIMIT 2',
      'SELECT (SUM(?t) AS ?s) (COUNT(*) AS ?n) WHERE { ?o :total ?t }',
      'SELECT (COUNT(*) AS ?n) WHERE { ?o :total ?x . ?c :age ?x }',
      'SELECT (AVG(?age) AS ?a) WHERE { ?c :age ?age ; :name "nobody" }',
    ]) {
      const { counted, whole } = await both(query);
      assert.deepEqual(counted.rows, whole.rows, query);
      assert.ok(counted.triples > 0, `${query}: evaluated over the records it reached`);
    }
  });

  it('counts a table whatever the reach bound, which only records read into the API count toward', async () => {
    const restore = overrideSparqlSettings({ maxReachedTriples: 3, maxDatasetTriples: 1_000 });
    try {
      const { rows, triples } = await ask('SELECT (COUNT(*) AS ?n) WHERE { ?o a :Order ; :total ?t } # bounded');
      assert.equal(triples, 0);
      assert.equal(rows.length, 1);
    } finally {
      restore();
    }
  });

  it('does not trust a count over a number PostgreSQL writes otherwise than JavaScript (exponent notation), and evaluates it instead', async () => {
    const model = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
    const endpoint = (await t.client.get(`/api/v1/data-endpoints/${orders}`)).body.dataEndpoint;
    await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().encryptionKey), endpoint.target, { operation: 'append', rows: [{ id: 1e21, amount: 1e-7 }], provenance: { kind: 'write', id: randomUUID() } });
    const { counted, whole } = await both('SELECT ?t (COUNT(*) AS ?n) WHERE { ?o :total ?t } GROUP BY ?t');
    assert.deepEqual(counted.rows, whole.rows);
    assert.ok(counted.rows.some((row) => row.includes('1e-7')), 'the value as the mapping writes it');
    assert.ok(counted.triples > 0, 'evaluated, not counted');
  });

});
