import assert from 'node:assert/strict';
import fc from 'fast-check';
import type pg from 'pg';
import { PluginInstallation } from '../../../db/models';
import { parseSparql } from '../../../ontology/sparql-engine';
import { readingRemote } from '../../../plugins/postgres-table';
import { capabilityContext } from '../../../services/endpoints/data-endpoints';
import { installPlugin } from '../../../services/endpoints/plugins';
import { externalSource } from '../../../services/ontology/sparql-external-sql';
import { runSqlOver, sqlQueryOf } from '../../../services/ontology/sparql-in-sql';
import { env } from '../../support/environment';
import { clientFor, externalDatabase, installationSettingsFor } from '../../support/external-postgres';
import { as, newKey, request } from '../../support/fixtures';
import { activeOntology, bind, ONTOLOGY_SCOPES, OntologyTenant, ontologyTenant, overrideSparqlSettings, shownAnswer } from '../../support/ontology';
import { until } from '../../support/polling';
import { choices, generatedQuery, Picks } from '../../support/sparql-generated-queries';

// SPARQL over bindings of postgres_table endpoints, answered by the external PostgreSQL
// (services/ontology/sparql-external-sql.ts): the same answers as the evaluator gives over the
// tables read whole into the API, over columns of every type the SQL reads (text, blank-padded
// character, uuid, integers, bigint past 2^53, numeric, floats, booleans, arrays with NULLs and
// repeats, NULLs), and the evaluator's answers where a column's JavaScript value is not one SQL
// writes (dates, jsonb, NaN). The data guard decides which bindings a key reads; a workspace's
// SQL-backed queries share its concurrency slots; a query stops at its time limit and when its
// client goes; no dataset bound applies to what PostgreSQL answers.

const DATABASE = `weft_sparql_pg_${process.pid}`;
const SEED = Number(process.env.SPARQL_IN_SQL_SEED ?? 20261203);
const RUNS = Number(process.env.SPARQL_IN_SQL_RUNS ?? 40);

const SCHEMA = `
  CREATE TABLE customers (
    id integer PRIMARY KEY, full_name text, nick character(6), years integer, big bigint, amount numeric,
    ratio double precision, score real, active boolean, tags text[], codes integer[], bigs bigint[], ref uuid,
    manager integer, born date, doc jsonb);
  -- No primary key: two rows may share an id, and so a subject; ids of text need percent-encoding.
  CREATE TABLE orders (id text, amount numeric, customer integer, labels varchar(10)[]);
  CREATE TABLE payroll (id integer PRIMARY KEY, salary numeric);
  CREATE VIEW large_orders AS SELECT * FROM orders WHERE amount > 10;
  INSERT INTO customers VALUES
    (1, 'Ada', 'ab', 36, 9007199254740993, 1.50, 0.1, 0.1, true, '{x,y,x,NULL}', '{1,2,2}', '{9007199254740993,-4}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', NULL, '1990-01-01', '{"n": 1.0}'),
    (2, 'Bob', NULL, 41, -5, 12345678901234567890123.25, 1e20, 16777217, false, '{}', NULL, NULL, NULL, 1, '1985-06-15', '[1, 2.50]'),
    (3, 'Émile', 'x y', NULL, 0, 0, -0.0, 3.5, NULL, '{"Zoë",bob,"a,b"}', '{3,4}', '{0}', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12', 2, NULL, '"text"'),
    (4, 'Zoë', 'Zoë', 30, 42, -0.001, 2.5, -1.25, true, '{Ada}', '{30}', NULL, NULL, 9, '2001-02-03', 'null'),
    (5, NULL, '', 36, 7, 100, 0.000001, 0, false, NULL, '{}', '{}', NULL, 1, NULL, NULL),
    (6, '𝒜', 'ﬀ', 41, 1, 1e-3, 123.456, 1e10, true, '{"",NULL}', '{NULL,5}', NULL, NULL, 3, NULL, '{"a": [1]}');
  INSERT INTO orders VALUES
    ('1', 10, 1, '{a}'), ('1', 12, 1, NULL), ('2', 5.5, 2, '{b,b}'), ('a b', NULL, 3, '{}'), ('', 1, 1, NULL),
    ('x/é', 0.1, 9, '{c}'), ('3', 30, 4, NULL), ('4', 2.50, NULL, '{NULL}');
  INSERT INTO payroll VALUES (1, 9100), (2, 7200);
  CREATE INDEX customers_years ON customers (years);
  ANALYZE customers; ANALYZE orders;`;

const TERMS = [
  { id: 'Customer', kind: 'class' },
  { id: 'Order', kind: 'class' },
  { id: 'Birth', kind: 'class' },
  { id: 'Salary', kind: 'class' },
  { id: 'Wage', kind: 'class' },
  { id: 'LargeOrder', kind: 'class' },
  ...(
    [
      ['name', 'xsd:string'], ['nick', 'xsd:string'], ['age', 'xsd:integer'], ['big', 'xsd:integer'], ['amount', 'xsd:decimal'], ['ratio', 'xsd:double'], ['score', 'xsd:double'],
      ['active', 'xsd:boolean'], ['tag', 'xsd:string'], ['code', 'xsd:integer'], ['bigs', 'xsd:integer'], ['ref', 'xsd:string'], ['label', 'xsd:string'], ['activeText', 'xsd:string'], ['ratioText', 'xsd:string'],
    ] as const
  ).map(([id, datatype]) => ({ id, kind: 'property', domain: 'Customer', datatype })),
  { id: 'total', kind: 'property', domain: 'Order', datatype: 'xsd:decimal' },
  { id: 'orderLabel', kind: 'property', domain: 'Order', datatype: 'xsd:string' },
  { id: 'born', kind: 'property', domain: 'Birth', datatype: 'xsd:date' },
  { id: 'doc', kind: 'property', domain: 'Birth', datatype: 'xsd:string' },
  { id: 'salary', kind: 'property', domain: 'Salary', datatype: 'xsd:decimal' },
  { id: 'wage', kind: 'property', domain: 'Wage', datatype: 'xsd:decimal' },
  { id: 'largeTotal', kind: 'property', domain: 'LargeOrder', datatype: 'xsd:decimal' },
];
const LINKS = [
  { id: 'placedBy', from: 'Order', to: 'Customer' },
  { id: 'managedBy', from: 'Customer', to: 'Customer' },
];
const CUSTOMER_MAPPING = {
  subjectTemplate: 'https://example.com/customers/{id}',
  properties: { name: 'full_name', nick: 'nick', age: 'years', big: 'big', amount: 'amount', ratio: 'ratio', score: 'score', active: 'active', tag: 'tags', code: 'codes', bigs: 'bigs', ref: 'ref', activeText: 'active', ratioText: 'ratio' },
  links: { managedBy: { field: 'manager', targetTemplate: 'https://example.com/customers/{manager}' } },
};
const ORDER_MAPPING = {
  subjectTemplate: 'https://example.com/orders/{id}',
  properties: { total: 'amount', orderLabel: 'labels' },
  links: { placedBy: { field: 'customer', targetTemplate: 'https://example.com/customers/{customer}' } },
};

describe('SPARQL over postgres_table bindings, answered by their PostgreSQL', function () {
  this.timeout(300_000);
  let drop: (() => Promise<void>) | undefined;
  let external: pg.Client;
  let t: OntologyTenant;
  let payrollKey: string;
  let baseIri: string;
  let installationId: string;
  let restoreSettings: () => void;

  before(async () => {
    // PostgreSQL answers whatever the tables' size, and a graph read whole is never kept for the next query.
    restoreSettings = overrideSparqlSettings({ sqlMinRecords: 0, unpinnedTtlSeconds: 0 });
    ({ client: external, drop } = await externalDatabase(DATABASE));
    await external.query(SCHEMA);
    t = await ontologyTenant();
    payrollKey = await newKey(t.ws, { scopes: ONTOLOGY_SCOPES, readPermissions: ['customers.read', 'payroll'] });
    installationId = (await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'postgres_table', installationSettingsFor(DATABASE))).id;
    const packageId = await activeOntology(t, { terms: TERMS, links: LINKS });
    baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
    const granted = as(payrollKey);
    const endpoint = async (name: string, target: Record<string, unknown>) => {
      const res = await granted.post('/api/v1/data-endpoints', { name: `${name}-${process.pid}`, namespace: 'external', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: installationId, target });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      return res.body.dataEndpoint.id as string;
    };
    const customers = await endpoint('customers', { table: 'customers' });
    const orders = await endpoint('orders', { schema: 'public', table: 'orders' });
    const payroll = await endpoint('payroll', { table: 'payroll' });
    const largeOrders = await endpoint('large-orders', { table: 'large_orders' });
    // Another endpoint over the same table: its data is guarded by the first one's grant.
    const payrollTwin = await endpoint('payroll-twin', { schema: 'public', table: 'payroll' });
    const bindAs = (body: Record<string, unknown>) => bind({ ...t, client: granted }, { ontologyPackageId: packageId, ...body });
    await bindAs({ termId: 'Customer', dataEndpointId: customers, mapping: CUSTOMER_MAPPING });
    await bindAs({ termId: 'Order', dataEndpointId: orders, mapping: ORDER_MAPPING });
    // Dates (their text, as the driver keeps them) and jsonb (parsed JSON, which SQL does not write as JavaScript does).
    await bindAs({ termId: 'Birth', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/births/{id}', properties: { born: 'born', doc: 'doc' } } });
    await bindAs({ termId: 'LargeOrder', dataEndpointId: largeOrders, mapping: { subjectTemplate: 'https://example.com/large-orders/{id}', properties: { largeTotal: 'amount' } } });
    await bindAs({ termId: 'Salary', dataEndpointId: payroll, mapping: { subjectTemplate: 'https://example.com/salaries/{id}', properties: { salary: 'salary' } }, requiredReadPermissions: ['payroll'] });
    await bindAs({ termId: 'Wage', dataEndpointId: payrollTwin, mapping: { subjectTemplate: 'https://example.com/wages/{id}', properties: { wage: 'salary' } } });
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
  });
  after(async () => {
    restoreSettings?.();
    await drop?.();
  });

  const send = (body: string, key = t.key) => request('POST', `${t.base}/sparql`, { key, rawBody: `PREFIX : <${baseIri}>\n${body}`, headers: { 'Content-Type': 'application/sparql-query' } });
  /** The rows as JSON texts, sorted unless the query's ORDER BY orders them completely (`ordered`). */
  const ask = async (body: string, ordered = false, key = t.key) => {
    const res = await send(body, key);
    assert.equal(res.status, 200, `${body}: ${JSON.stringify(res.body)}`);
    const rows = (res.body.results.bindings as Array<Record<string, unknown>>).map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).sort())));
    return { rows: ordered ? rows : rows.sort(), triples: Number(res.headers.get('weft-dataset-triples')), version: res.headers.get('weft-dataset-version'), withheld: res.headers.get('weft-withheld-bindings') };
  };
  /** The answer by PostgreSQL, and the evaluator's over the tables read whole. */
  const both = async (body: string, ordered = false, key = t.key) => {
    const inSql = await ask(body, ordered, key);
    const whole = overrideSparqlSettings({ tableReads: 'whole' });
    try {
      return { inSql, whole: await ask(body, ordered, key) };
    } finally {
      whole();
    }
  };
  const same = async (query: string, ordered = false) => {
    const { inSql, whole } = await both(query, ordered);
    assert.deepEqual(inSql.rows, whole.rows, query);
    assert.ok(whole.triples > 0, `${query}: the tables were read whole`);
    return inSql;
  };
  const answeredInSql = async (query: string, ordered = false) => {
    const inSql = await same(query, ordered);
    assert.equal(inSql.triples, 0, `${query}: answered by PostgreSQL, no triple read into the API`);
    return inSql;
  };

  describe('answers as the in-memory mapping of the same rows does', () => {
    const QUERIES = [
      // Each column type as a property's values: text, character(6) (blank-padded), integers, bigint past 2^53 and numeric (their text), floats, booleans, uuid.
      'SELECT ?c ?name WHERE { ?c :name ?name }',
      'SELECT ?c ?nick WHERE { ?c :nick ?nick }',
      'SELECT ?c ?age WHERE { ?c :age ?age }',
      'SELECT ?c ?big WHERE { ?c :big ?big }',
      'SELECT ?c ?amount WHERE { ?c :amount ?amount }',
      'SELECT ?c ?ratio WHERE { ?c :ratio ?ratio }',
      'SELECT ?c ?score WHERE { ?c :score ?score }',
      'SELECT ?c ?active ?text WHERE { ?c :active ?active ; :activeText ?text }',
      'SELECT ?c ?text WHERE { ?c :ratioText ?text }',
      'SELECT ?c ?ref WHERE { ?c :ref ?ref }',
      'SELECT ?b ?born WHERE { ?b :born ?born }',
      // Arrays: an element a triple, repeats once, a NULL element as "null", nested arrays none.
      'SELECT ?c ?tag WHERE { ?c :tag ?tag }',
      'SELECT ?c ?code WHERE { ?c :code ?code }',
      'SELECT ?c ?bigs WHERE { ?c :bigs ?bigs }',
      'SELECT ?o ?label WHERE { ?o :orderLabel ?label }',
      'SELECT ?tag (COUNT(*) AS ?n) WHERE { ?c :tag ?tag } GROUP BY ?tag',
      // Links, subjects that need percent-encoding or share an IRI (no primary key), a key of '' (no subject).
      'SELECT ?o ?c WHERE { ?o :placedBy ?c }',
      'SELECT ?o ?t WHERE { ?o a :Order OPTIONAL { ?o :total ?t } }',
      'SELECT ?c ?m WHERE { ?c :managedBy ?m }',
      'SELECT ?c WHERE { ?c a :Customer }',
      // Joins, counts, totals, filters, order.
      'SELECT ?name (COUNT(?o) AS ?n) (SUM(?t) AS ?s) WHERE { ?o :placedBy ?c ; :total ?t . ?c :name ?name } GROUP BY ?name',
      'SELECT ?c ?m ?name WHERE { ?c :managedBy ?m . ?m :name ?name }',
      'SELECT (SUM(?age) AS ?s) (AVG(?age) AS ?a) (COUNT(*) AS ?n) WHERE { ?c :age ?age }',
      'SELECT (SUM(?amount) AS ?s) (AVG(?amount) AS ?a) WHERE { ?c :amount ?amount }',
      'SELECT (SUM(?big) AS ?s) WHERE { ?c :big ?big }',
      'SELECT ?c ?age WHERE { ?c :age ?age FILTER (?age > 30 && ?age != 41) }',
      // FILTERs that narrow the rows read by a column condition: fractions against integers, numeric and bigint columns, text equality.
      'SELECT ?c ?age WHERE { ?c :age ?age FILTER (?age >= 35.5 && ?age <= 40.9) }',
      'SELECT ?c ?age WHERE { ?c :age ?age FILTER (?age < -0.5 || ?age = 36) }',
      'SELECT ?c ?age WHERE { ?c :age ?age FILTER (?age = 36.0) }',
      'SELECT ?c ?age WHERE { ?c :age ?age FILTER (?age = 36.5) }',
      'SELECT ?c ?a WHERE { ?c :amount ?a FILTER (?a >= 1.5) }',
      'SELECT ?c ?b WHERE { ?c :big ?b FILTER (?b > 9007199254740992) }',
      'SELECT ?c ?b WHERE { ?c :big ?b FILTER (?b < 99999999999999999999999) }',
      'SELECT ?c ?age WHERE { ?c :name ?n ; :age ?age FILTER (?n = "Zoë") }',
      'SELECT ?o ?t WHERE { ?o :total ?t ; :placedBy ?c FILTER (?t > 5) }',
      'SELECT ?c ?amount WHERE { ?c :amount ?amount FILTER (?amount < 2) }',
      'SELECT ?c ?name WHERE { ?c :name ?name FILTER (?name > "B" || contains(?name, "d")) } ORDER BY ?name',
      'SELECT ?c ?nick WHERE { ?c :nick ?nick FILTER (strends(?nick, " ")) }',
      'SELECT ?name ?age WHERE { ?c :name ?name OPTIONAL { ?c :age ?age } } ORDER BY DESC(?age) ?name LIMIT 4',
      'SELECT DISTINCT ?age WHERE { ?c :age ?age } ORDER BY ?age',
      'SELECT ?c ?len WHERE { ?c :name ?name BIND (STRLEN(?name) AS ?len) }',
      'SELECT ?o WHERE { ?o :placedBy ?c FILTER NOT EXISTS { ?c :age ?age FILTER (?age > 35) } }',
      // Constant subjects and link objects, read by a condition on the key column (integer, text shared by two rows, percent-encoded).
      'SELECT ?name ?tag WHERE { <https://example.com/customers/1> :name ?name OPTIONAL { <https://example.com/customers/1> :tag ?tag } }',
      'SELECT ?t WHERE { <https://example.com/orders/1> :total ?t }',
      'SELECT ?t ?c WHERE { <https://example.com/orders/x%2F%C3%A9> :total ?t ; :placedBy ?c }',
      'SELECT ?n WHERE { <https://example.com/customers/01> :name ?n }',
      'SELECT ?n WHERE { <https://example.com/customers/99999999999999999999> :name ?n }',
      'SELECT ?o ?t WHERE { ?o :placedBy <https://example.com/customers/1> ; :total ?t }',
      'SELECT ?c ?n WHERE { ?c :managedBy <https://example.com/customers/1> ; :name ?n }',
    ];
    for (const query of QUERIES) it(query, () => answeredInSql(query, query.includes('ORDER BY')));

    it('answers generated combinations of FILTER, OPTIONAL, VALUES, UNION, BIND, MINUS, (NOT) EXISTS, subqueries and star joins as the evaluator does', async function () {
      this.timeout(600_000);
      await fc.assert(
        fc.asyncProperty(choices, async (numbers) => {
          const query = generatedQuery(new Picks(numbers));
          await answeredInSql(query.text, query.ordered);
        }),
        { seed: SEED, numRuns: RUNS },
      );
    });

    it('answers over a view (no primary key) as over its rows', async () => {
      assert.equal((await answeredInSql('SELECT ?o ?t WHERE { ?o :largeTotal ?t }')).rows.length, 2);
    });

    it('reads the live table: a changed row is in the next answer, under a version of its own', async () => {
      const query = 'SELECT ?c ?age WHERE { ?c :age ?age FILTER (?age >= 90) }';
      const before = await answeredInSql(query);
      await external.query('UPDATE customers SET years = 99 WHERE id = 6');
      try {
        const after = await answeredInSql(query);
        assert.deepEqual(before.rows, []);
        assert.equal(after.rows.length, 1);
        assert.notEqual(after.version, before.version, 'live data is not repeatable');
        const again = await ask(query);
        assert.notEqual(again.version, after.version, 'nor named by one version twice');
      } finally {
        await external.query('UPDATE customers SET years = 41 WHERE id = 6');
      }
    });
  });

  it('answers an ASK or a CONSTRUCT made of a SELECT it takes on the installation, as the evaluator does over the tables read whole', async () => {
    const answer = (body: string) => shownAnswer(`${t.base}/sparql`, t.key, `PREFIX : <${baseIri}>\n${body}`);
    for (const query of [
      'ASK { ?c :age ?age FILTER (?age > 40) }',
      'ASK { ?o :placedBy ?c . ?c :age ?age FILTER (?age > 100) }',
      'CONSTRUCT { ?c :name ?name ; :tag ?tag } WHERE { ?c :name ?name OPTIONAL { ?c :tag ?tag } }',
      'CONSTRUCT { ?o :placedBy ?c . ?c :big ?big } WHERE { ?o :placedBy ?c . ?c :big ?big }',
    ]) {
      const inSql = await answer(query);
      const whole = overrideSparqlSettings({ tableReads: 'whole' });
      try {
        const evaluated = await answer(query);
        assert.equal(inSql.shown, evaluated.shown, query);
        assert.ok(evaluated.triples > 0, `${query}: the evaluator read the tables`);
      } finally {
        whole();
      }
      assert.equal(inSql.triples, 0, `${query}: answered by PostgreSQL`);
    }
  });

  it("writes a date column's values as the date's text, in PostgreSQL and in memory", async () => {
    // pg's own parser made a Date at the process's local midnight, which the mapping wrote as JavaScript's date text.
    const { rows } = await answeredInSql('SELECT ?born WHERE { ?b :born ?born }');
    const date = 'http://www.w3.org/2001/XMLSchema#date';
    assert.deepEqual(rows, ['1985-06-15', '1990-01-01', '2001-02-03'].map((value) => JSON.stringify({ born: { type: 'literal', value, datatype: date } })));
    assert.deepEqual((await same('SELECT ?b WHERE { ?b :born ?born FILTER (?born > "1989-12-31"^^<http://www.w3.org/2001/XMLSchema#date>) }')).rows.length, 2);
  });

  describe('reads into the API what SQL would not write as JavaScript does', () => {
    it('evaluates a binding of a jsonb column (parsed JSON) beside a date column, with the same answers', async () => {
      const inSql = await same('SELECT ?b ?born ?doc WHERE { ?b :born ?born OPTIONAL { ?b :doc ?doc } }');
      assert.ok(inSql.triples > 0, 'evaluated over the rows read');
      // jsonb keeps 1.0 and 2.50 as written; JavaScript reads them as 1 and 2.5, and the mapping writes those.
      assert.ok(inSql.rows.some((row) => row.includes('{\\"n\\":1}')), inSql.rows.join('\n'));
      assert.ok(inSql.rows.some((row) => row.includes('"value":"2.5"')), inSql.rows.join('\n'));
    });

    it('still answers in SQL a query over the other bindings of the table', () => answeredInSql('SELECT ?c ?age WHERE { ?c :age ?age }').then(() => undefined));

    it('evaluates a nested array (JavaScript writes its elements as "1,2"), with the same answers', async () => {
      await external.query(`UPDATE customers SET codes = '{{1,2},{3,4}}' WHERE id = 3`);
      try {
        const inSql = await same('SELECT ?c ?code WHERE { ?c :code ?code }');
        assert.ok(inSql.triples > 0, 'evaluated');
        assert.ok(inSql.rows.some((row) => row.includes('"value":"1,2"')), inSql.rows.join('\n'));
      } finally {
        await external.query(`UPDATE customers SET codes = '{3,4}' WHERE id = 3`);
      }
    });

    it('evaluates a float NaN (null in JavaScript’s JSON) and one JavaScript writes in exponent notation, with the same answers', async () => {
      for (const value of ['NaN', '1e-7', 'Infinity']) {
        await external.query(`UPDATE customers SET ratio = '${value}' WHERE id = 5`);
        try {
          for (const query of ['SELECT ?c ?text WHERE { ?c :ratioText ?text }', 'SELECT ?c ?ratio WHERE { ?c :ratio ?ratio }']) {
            const inSql = await same(query);
            assert.ok(inSql.triples > 0, `${value}: ${query}: evaluated`);
          }
          // A query not reading the column is still answered in SQL.
          await answeredInSql('SELECT ?c ?name WHERE { ?c :name ?name }');
        } finally {
          await external.query(`UPDATE customers SET ratio = 0.000001 WHERE id = 5`);
        }
      }
    });
  });

  describe('the data guard', () => {
    it('leaves out the bindings a key may not read, grants following the table behind each endpoint', async () => {
      const integer = (value: string) => JSON.stringify({ n: { type: 'literal', value, datatype: 'http://www.w3.org/2001/XMLSchema#integer' } });
      // The payroll binding, and the other endpoint's over the same table, which its grant guards too.
      for (const query of ['SELECT ?s ?v WHERE { ?s :salary ?v }', 'SELECT ?s ?v WHERE { ?s :wage ?v }']) {
        const withheld = await ask(query);
        assert.deepEqual(withheld.rows, [], query);
        assert.equal(withheld.withheld, '2', query);
        const granted = await ask(query, false, payrollKey);
        assert.equal(granted.triples, 0, `${query}: answered by PostgreSQL`);
        assert.equal(granted.rows.length, 2, query);
        assert.equal(granted.withheld, null, query);
      }
      const count = 'SELECT (COUNT(*) AS ?n) WHERE { ?s a :Salary }';
      assert.deepEqual((await ask(count)).rows, [integer('0')]);
      const counted = await ask(count, false, payrollKey);
      assert.equal(counted.triples, 0);
      assert.deepEqual(counted.rows, [integer('2')]);
    });
  });

  describe('what makes the statements fast on the remote table (EXPLAIN)', () => {
    interface PlanNode { 'Node Type': string; 'Relation Name'?: string; 'Index Cond'?: string; Plans?: PlanNode[] }
    const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];
    /** The plan of each statement the query's answer runs on the installation's database, with sequential scans disabled (an index that can narrow the rows is then used). */
    const plansOf = async (text: string, termId: string, target: Record<string, unknown>, mapping: typeof CUSTOMER_MAPPING | typeof ORDER_MAPPING | { subjectTemplate: string; properties: Record<string, string> }) => {
      const terms = {
        classes: TERMS.filter((term) => term.kind === 'class').map((term) => term.id),
        properties: Object.fromEntries(TERMS.filter((term) => term.kind === 'property').map((term) => [term.id, { domain: (term as { domain: string }).domain, datatype: (term as { datatype: string }).datatype }])),
        links: Object.fromEntries(LINKS.map((link) => [link.id, { from: link.from, to: link.to }])),
      };
      const parsed = parseSparql(`PREFIX : <${baseIri}>\n${text}`);
      if (parsed.kind !== 'query') throw new Error(`${text} is no query`);
      const query = sqlQueryOf(parsed.parsed, [{ termId, mapping }], () => ({ predicates: new Set(), types: new Set() }), terms, baseIri)!;
      assert.ok(query, `${text} is translated`);
      const installation = (await PluginInstallation.query(env().db).findById(installationId))!;
      const plans: PlanNode[][] = [];
      await readingRemote(capabilityContext(env().db, installation, env().dependencies()), { timeoutMs: 60_000, stopped: () => new Error('stopped') }, async (reads) => {
        await reads.query('SET LOCAL enable_seqscan = off', []);
        const source = (await externalSource(reads, target, mapping))!;
        await runSqlOver(async (sql, params) => {
          const [{ 'QUERY PLAN': plan }] = await reads.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${sql}`, params.values);
          plans.push(nodes(plan[0].Plan));
          return reads.query(sql, params.values);
        }, query, [source.source]);
      });
      return plans;
    };
    const scansOf = (plan: PlanNode[], table: string) => plan.filter((node) => node['Relation Name'] === table);

    it('reads a star over a table whose primary key is its subject field in one scan, a table without one in two scans a triple', async () => {
      const keyed = await plansOf('SELECT ?c ?name ?age WHERE { ?c :name ?name ; :age ?age }', 'Customer', { table: 'customers' }, { subjectTemplate: CUSTOMER_MAPPING.subjectTemplate, properties: { name: 'full_name', age: 'years' } });
      assert.equal(keyed.length, 1, 'one statement: its star was read in one scan');
      assert.equal(scansOf(keyed[0], 'customers').length, 1);
      const unkeyed = await plansOf('SELECT ?o ?t ?c WHERE { ?o :total ?t ; :placedBy ?c }', 'Order', { table: 'orders' }, ORDER_MAPPING);
      assert.equal(unkeyed.length, 1);
      // Each triple's values: the rows' scalars, and the elements of their arrays.
      assert.equal(scansOf(unkeyed[0], 'orders').length, 4);
    });

    it('reads through an index on a column a FILTER compares with a constant, and every row for what no index serves', async () => {
      const mapping = { subjectTemplate: CUSTOMER_MAPPING.subjectTemplate, properties: { age: 'years', name: 'full_name', nick: 'nick' } };
      const indexed = (plan: PlanNode[]) => plan.filter((node) => node['Index Cond'] !== undefined).map((node) => node['Index Cond']!);
      // A number of an integer column, a fraction rounded to keep every integer the FILTER keeps, two conditions at once.
      for (const [query, condition] of [
        ['SELECT ?c ?age WHERE { ?c :age ?age FILTER (?age > 40) }', /years > /],
        ['SELECT ?c ?age WHERE { ?c :age ?age FILTER (?age >= 35.5 && ?age < 41) }', /years >= .*years < |years < .*years >= /],
        ['SELECT ?c ?name WHERE { ?c :name ?name ; :age ?age FILTER (?age = 36) }', /years = /],
      ] as const) {
        const [plan] = await plansOf(query, 'Customer', { table: 'customers' }, mapping);
        assert.equal(scansOf(plan, 'customers').length, 1, query);
        assert.match(indexed(plan).join(' AND '), condition, `${query}: customers_years serves the FILTER`);
      }
      // A blank-padded character column, text order and a comparison inside an OR narrow nothing (sequential scans disabled, so an index would show).
      await external.query('CREATE INDEX IF NOT EXISTS customers_nick ON customers (nick); CREATE INDEX IF NOT EXISTS customers_name ON customers (full_name)');
      for (const query of ['SELECT ?c WHERE { ?c :nick ?n ; :age ?age FILTER (?n = "ab    ") }', 'SELECT ?c WHERE { ?c :name ?n ; :age ?age FILTER (?n > "B") }', 'SELECT ?c WHERE { ?c :age ?age FILTER (?age > 40 || ?age < 31) }']) {
        const [plan] = await plansOf(query, 'Customer', { table: 'customers' }, mapping);
        assert.deepEqual(indexed(plan), [], query);
      }
    });
  });

  describe('bounds', () => {
    it('answers over tables past the dataset bound, which the whole read refuses', async () => {
      const restore = overrideSparqlSettings({ maxDatasetTriples: 10 });
      try {
        const query = 'SELECT ?c ?tag WHERE { ?c :tag ?tag }';
        const inSql = await ask(query);
        assert.equal(inSql.triples, 0);
        assert.ok(inSql.rows.length > 0);
        const whole = overrideSparqlSettings({ tableReads: 'whole' });
        try {
          const refused = await send(query);
          assert.equal(refused.status, 422, JSON.stringify(refused.body));
          assert.equal(refused.body.code, 'dataset_too_large');
        } finally {
          whole();
        }
      } finally {
        restore();
      }
    });

    describe('a query waiting on the remote table', () => {
      let locker: pg.Client;
      const waiting = async () => (await external.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'weft' AND wait_event_type = 'Lock'`)).rows.length;
      beforeEach(async () => {
        // An exclusive lock no read passes: a query's statement waits on it until it is stopped or the lock goes.
        locker = clientFor(DATABASE);
        await locker.connect();
        await locker.query('BEGIN; LOCK TABLE customers IN ACCESS EXCLUSIVE MODE');
      });
      afterEach(async () => {
        await locker.query('ROLLBACK').catch(() => undefined);
        await locker.end();
      });

      it('holds one of the workspace’s SQL slots: past WEFT_SPARQL_SQL_CONNECTIONS a query is refused 429, and the waiting one answers once the lock goes', async () => {
        const restore = overrideSparqlSettings({ sqlConnections: 1, timeoutMs: 110_000 });
        try {
          const first = ask('SELECT ?c ?age WHERE { ?c :age ?age } # first');
          await until('the first query to wait on the lock', async () => (await waiting()) > 0);
          const refused = await send('SELECT ?c ?name WHERE { ?c :name ?name } # second');
          assert.equal(refused.status, 429, JSON.stringify(refused.body));
          assert.equal(refused.body.code, 'sparql_concurrency_limit');
          assert.ok(Number(refused.headers.get('retry-after')) >= 1);
          await locker.query('ROLLBACK');
          const answered = await first;
          assert.equal(answered.triples, 0);
          assert.equal(answered.rows.length, 5);
        } finally {
          restore();
        }
      });

      it('is cancelled on the remote database when its client goes away', async () => {
        const restore = overrideSparqlSettings({ timeoutMs: 110_000 });
        try {
          const client = new AbortController();
          const sent = fetch(`${env().baseUrl}${t.base}/sparql`, { method: 'POST', headers: { Authorization: `Bearer ${t.key}`, 'Content-Type': 'application/sparql-query' }, body: `PREFIX : <${baseIri}>\nSELECT ?c ?age WHERE { ?c :age ?age } # abandoned`, signal: client.signal }).catch((error: unknown) => error);
          await until('the query to wait on the lock', async () => (await waiting()) > 0);
          client.abort();
          assert.equal(((await sent) as Error).name, 'AbortError');
          // Cancelled, not left waiting for the lock (which is still held) or its time limit.
          await until('the statement to be cancelled', async () => (await waiting()) === 0, 30_000);
        } finally {
          restore();
        }
      });

      it('is stopped at its time limit: 422 query_timeout, the statement no longer running', async () => {
        const restore = overrideSparqlSettings({ timeoutMs: 1_000 });
        try {
          const stopped = await send('SELECT ?c ?age WHERE { ?c :age ?age } # timed');
          assert.equal(stopped.status, 422, JSON.stringify(stopped.body));
          assert.equal(stopped.body.code, 'query_timeout');
          assert.equal(await waiting(), 0);
        } finally {
          restore();
        }
      });
    });
  });
});
