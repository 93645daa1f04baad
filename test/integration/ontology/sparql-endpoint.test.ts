import assert from 'node:assert/strict';
import type * as RDF from '@rdfjs/types';
import { Parser } from 'n3';
import { isomorphic } from 'rdf-isomorphic';
import { RdfXmlParser } from 'rdfxml-streaming-parser';
import { env } from '../../support/environment';
import { as, keyIdOf, newKey, request } from '../../support/fixtures';
import { bind, customerOntology, OntologyTenant, ontologyTenant, seededTable } from '../../support/ontology';

const PREFIXES = (baseIri: string) => `PREFIX : <${baseIri}> PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> `;

/** The triples of an RDF/XML document, as read by a parser of its own (not Weft's serializer). */
function readRdfXml(text: string): Promise<RDF.Quad[]> {
  return new Promise((resolve, reject) => {
    const quads: RDF.Quad[] = [];
    const parser = new RdfXmlParser();
    parser.on('data', (q: RDF.Quad) => quads.push(q));
    parser.on('error', reject);
    parser.on('end', () => resolve(quads));
    parser.write(text);
    parser.end();
  });
}

/** The SPARQL 1.1 Protocol's answer to a request that does not parse: 400, in the one problem format, with the code clients knew. */
function assertMalformed(res: { status: number; headers: Headers; body: any }, what: string): void {
  assert.equal(res.status, 400, `${what}: ${JSON.stringify(res.body)}`);
  assert.match(res.headers.get('content-type')!, /application\/problem\+json/, what);
  assert.equal(res.body.code, 'malformed_query', what);
  assert.equal(res.body.status, 400, what);
  assert.equal(res.body.title, 'Bad request', what);
  assert.equal(res.body.type, 'https://weft.dev/problems/malformed_query', what);
  assert.match(res.body.message, /does not parse|holds no query/, what);
  assert.equal(typeof res.body.requestId, 'string', what);
}

describe('The SPARQL 1.1 Protocol endpoint, queried by a real SPARQL client', function () {
  this.timeout(60_000);
  let t: OntologyTenant;
  let endpointUrl: string;
  let baseIri: string;
  let customers: string;
  before(async () => {
    t = await ontologyTenant();
    const packageId = await customerOntology(t);
    baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
    customers = await seededTable(t, [
      { id: 1, full_name: 'Ada', years: 36 },
      { id: 2, full_name: 'Bob, "the builder"', years: 52 },
    ]);
    const orders = await seededTable(t, [{ id: 10, amount: 99.5, customer: 1 }]);
    await bind(t, {
      ontologyPackageId: packageId,
      termId: 'Customer',
      dataEndpointId: customers,
      mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } },
      requiredReadPermissions: ['customers.read'],
    });
    await bind(t, {
      ontologyPackageId: packageId,
      termId: 'Order',
      dataEndpointId: orders,
      mapping: { subjectTemplate: 'https://example.com/orders/{id}', properties: { total: 'amount' }, links: { placedBy: { field: 'customer', targetTemplate: 'https://example.com/customers/{customer}' } } },
    });
    endpointUrl = `${env().baseUrl}${t.base}/sparql`;
  });

  const client = async (key: string) => {
    const { default: ParsingClient } = await import('sparql-http-client/ParsingClient.js');
    return new ParsingClient({ endpointUrl, headers: { Authorization: `Bearer ${key}` } });
  };
  const select = `SELECT ?name WHERE { ?c a :Customer ; :name ?name } ORDER BY ?name`;

  it('is closed until an administrator turns the semantic consumer mode on', async () => {
    const res = await t.client.get(`${t.base}/sparql?query=${encodeURIComponent('ASK {}')}`);
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'semantic_mode_off');
    const on = await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' });
    assert.equal(on.status, 200, JSON.stringify(on.body));
    assert.equal(on.body.settings.semanticConsumerMode, 'read');
  });

  it('answers SELECT, ASK and CONSTRUCT over the package and the bound records', async () => {
    const sparql = await client(t.key);
    const rows = await sparql.query.select(PREFIXES(baseIri) + select);
    assert.deepEqual(rows.map((row: Record<string, { value: string }>) => row.name.value), ['Ada', 'Bob, "the builder"']);
    assert.equal(await sparql.query.ask(`${PREFIXES(baseIri)} ASK { <https://example.com/orders/10> :placedBy <https://example.com/customers/1> }`), true);
    assert.equal(await sparql.query.ask(`${PREFIXES(baseIri)} ASK { :Order a <http://www.w3.org/2002/07/owl#Class> }`), true, 'the package itself is queryable');
    const quads = await sparql.query.construct(`${PREFIXES(baseIri)} CONSTRUCT { ?c :name ?n } WHERE { ?c :name ?n }`);
    assert.equal(quads.size, 2);
    const ages = await sparql.query.select(`${PREFIXES(baseIri)} SELECT (SUM(?age) AS ?total) WHERE { ?c :age ?age }`);
    assert.equal(ages[0].total.value, '88');
  });

  it('negotiates every result format', async () => {
    const get = (query: string, accept: string) => request('GET', `${t.base}/sparql?query=${encodeURIComponent(PREFIXES(baseIri) + query)}`, { key: t.key, headers: { Accept: accept } });
    const json = await get(select, 'application/sparql-results+json');
    assert.equal(json.status, 200);
    assert.match(json.headers.get('content-type')!, /application\/sparql-results\+json/);
    assert.deepEqual(json.body.head.vars, ['name']);
    const xml = await get(select, 'application/sparql-results+xml');
    assert.match(xml.headers.get('content-type')!, /application\/sparql-results\+xml/);
    assert.match(String(xml.body), /<literal>Ada<\/literal>/);
    const csv = await get(select, 'text/csv');
    assert.equal(String(csv.body).replace(/\r\n/g, '\n'), 'name\nAda\n"Bob, ""the builder"""\n');
    const tsv = await get(select, 'text/tab-separated-values');
    assert.match(String(tsv.body), /^\?name\r?\n"Ada"\r?\n/);
    const construct = 'CONSTRUCT { ?c :name ?n } WHERE { ?c :name ?n }';
    assert.match(String((await get(construct, 'text/turtle')).body), /"Ada"/);
    assert.match(String((await get(construct, 'application/n-triples')).body), /<https:\/\/example.com\/customers\/1> <[^>]+name> "Ada" \./);
    const jsonld = await get(construct, 'application/ld+json');
    assert.match(jsonld.headers.get('content-type')!, /application\/ld\+json/);
    assert.ok(JSON.stringify(jsonld.body).includes('Ada'));
    const refused = await get(construct, 'application/sparql-results+json');
    assert.equal(refused.status, 406);
  });

  it('answers CONSTRUCT and DESCRIBE as RDF/XML when asked (SPARQLWrapper’s default), with the triples of the N-Triples answer', async () => {
    const get = (query: string, accept: string) => request('GET', `${t.base}/sparql?query=${encodeURIComponent(PREFIXES(baseIri) + query)}`, { key: t.key, headers: { Accept: accept } });
    const asTriples = async (query: string) => {
      const res = await get(query, 'application/n-triples');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      return new Parser({ format: 'application/n-triples' }).parse(String(res.body));
    };
    // Bound records' literals (typed numbers, a string with quotes and a comma), text XML must escape, a language tag, blank nodes as subjects and objects, rdf:type.
    const construct = `CONSTRUCT { ?c a :Customer ; :name ?n ; :age ?a ; :label ?odd ; :knows [ :label "vue"@fr ; :total 1.5 ] }
      WHERE { ?c :name ?n ; :age ?a BIND(CONCAT(?n, " <&> ]]> '\\"x\\"'") AS ?odd) }`;
    const describe = 'DESCRIBE <https://example.com/orders/10>';
    for (const query of [construct, describe]) {
      const res = await get(query, 'application/rdf+xml');
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.headers.get('content-type'), 'application/rdf+xml; charset=utf-8');
      assert.equal(res.headers.get('vary'), 'Accept');
      const fromXml = await readRdfXml(String(res.body));
      const expected = await asTriples(query);
      assert.ok(expected.length >= (query === construct ? 14 : 2), `${query}: ${expected.length} triples`);
      assert.ok(isomorphic(fromXml, expected), `${query}\n${String(res.body)}`);
    }
    const xml = String((await get(construct, 'application/rdf+xml')).body);
    assert.match(xml, /^<\?xml version="1\.0" encoding="utf-8"\?>\n<rdf:RDF /);
    assert.match(xml, /&lt;&amp;&gt; \]\]&gt;/, 'markup in literals is escaped');
    // POST as SPARQLWrapper sends it (its default Accept for CONSTRUCT), and q-values as for every other format.
    const posted = await request('POST', `${t.base}/sparql`, { key: t.key, rawBody: `query=${encodeURIComponent(PREFIXES(baseIri) + describe)}`, headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/rdf+xml' } });
    assert.equal(posted.status, 200, JSON.stringify(posted.body));
    assert.match(posted.headers.get('content-type')!, /^application\/rdf\+xml/);
    assert.match((await get(describe, 'application/rdf+xml;q=0.5, text/turtle')).headers.get('content-type')!, /^text\/turtle/);
    assert.match((await get(describe, 'text/turtle;q=0.5, application/rdf+xml')).headers.get('content-type')!, /^application\/rdf\+xml/);
    assert.match((await get(describe, 'application/xml')).headers.get('content-type')!, /^application\/rdf\+xml/, 'a graph asked for as XML is RDF/XML');
    assert.match((await get(describe, '*/*')).headers.get('content-type')!, /^text\/turtle/, 'Turtle stays the default');
    const refused = await get('SELECT * WHERE { ?s ?p ?o } LIMIT 1', 'application/rdf+xml');
    assert.equal(refused.status, 406, 'rows have no RDF/XML form');
  });

  it('applies named grants inside the results: two keys, two answers', async () => {
    const without = await newKey(t.ws, { scopes: ['sparql:query'] });
    const sparql = await client(without);
    assert.deepEqual(await sparql.query.select(PREFIXES(baseIri) + select), [], 'the customer binding needs customers.read');
    const orders = await sparql.query.select(`${PREFIXES(baseIri)} SELECT ?o WHERE { ?o a :Order }`);
    assert.equal(orders.length, 1, 'bindings without a grant stay visible');
  });

  it('refuses bad requests with their documented status', async () => {
    const key = t.key;
    const post = (body: string, type: string) => request('POST', `${t.base}/sparql`, { key, rawBody: body, headers: { 'Content-Type': type } });
    let res = await request('GET', `${t.base}/sparql?query=${encodeURIComponent('SELEKT ?x WHERE {')}`, { key });
    assertMalformed(res, 'GET, parsed in the API');
    res = await request('GET', `${t.base}/sparql?query=${encodeURIComponent('SELECT ?x WHERE {')}`, { key });
    assertMalformed(res, 'GET, parsed in the query thread');
    assert.equal(res.body.line, 1, 'the problem still says where the parser stopped');
    res = await request('GET', `${t.base}/sparql?query=${encodeURIComponent('CONSTRUCT { ?s ?p } WHERE { ?s ?p ?o }')}`, { key, headers: { Accept: 'application/rdf+xml' } });
    assertMalformed(res, 'GET, a CONSTRUCT');
    res = await request('GET', `${t.base}/sparql?update=${encodeURIComponent('INSERT DATA { <a:b> <a:c> <a:d> }')}`, { key });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'update_over_get');
    res = await request('GET', `${t.base}/sparql?query=${encodeURIComponent('ASK {}')}&default-graph-uri=${encodeURIComponent('https://example.com/g')}`, { key });
    assert.equal(res.status, 400);
    assert.equal(res.body.code, 'graph_parameters_refused');
    res = await post(`ASK {} #${'x'.repeat(1024 * 1024)}`, 'application/sparql-query');
    assert.equal(res.status, 413);
    // Texts whose first keyword names a query form are parsed and refused in the query thread, with the same answers.
    res = await post('SELECT ?x WHERE {', 'application/sparql-query');
    assertMalformed(res, 'POST application/sparql-query, parsed in the query thread');
    res = await post('SELEKT ?x WHERE {', 'application/sparql-query');
    assertMalformed(res, 'POST application/sparql-query, parsed in the API');
    res = await post('# a comment, no query\n', 'application/sparql-query');
    assertMalformed(res, 'POST of a text with no query');
    res = await post(`query=${encodeURIComponent('ASK { ?s ?p }')}`, 'application/x-www-form-urlencoded');
    assertMalformed(res, 'POST form query=, parsed in the query thread');
    res = await post(`query=${encodeURIComponent('ASC { ?s ?p ?o }')}`, 'application/x-www-form-urlencoded');
    assertMalformed(res, 'POST form query=, parsed in the API');
    res = await post('INSERT DATA { <https://example.com/a> <https://example.com/b> }', 'application/sparql-update');
    assertMalformed(res, 'POST application/sparql-update');
    res = await post(`update=${encodeURIComponent('DELETE DATA { <https://example.com/a> ')}`, 'application/x-www-form-urlencoded');
    assertMalformed(res, 'POST form update=');
    // Texts that parse but reach outside the dataset stay 422.
    res = await post('SELECT * FROM <https://example.com/g> WHERE { ?s ?p ?o }', 'application/sparql-query');
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'external_graph_refused');
    res = await request('GET', `${t.base}/sparql?query=${encodeURIComponent('SELECT * FROM NAMED <https://example.com/g> WHERE { GRAPH ?g { ?s ?p ?o } }')}`, { key });
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'external_graph_refused');
    res = await post(`query=${encodeURIComponent('CONSTRUCT { ?s ?p ?o } FROM <https://example.com/g> WHERE { ?s ?p ?o }')}`, 'application/x-www-form-urlencoded');
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'external_graph_refused');
    res = await post('ASK { SERVICE <https://example.com/sparql> { ?s ?p ?o } }', 'application/sparql-query');
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'service_refused');
    res = await post('INSERT { ?s ?p ?o } WHERE { SERVICE <https://example.com/sparql> { ?s ?p ?o } }', 'application/sparql-update');
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'service_refused');
    res = await post(JSON.stringify({ input: {} }), 'application/json');
    assert.equal(res.status, 415);
    assert.equal(res.body.code, 'published_query_body_refused');
    res = await post('INSERT DATA { <https://example.com/customers/9> <https://example.com/p> "x" }', 'application/sparql-update');
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'semantic_mode_read_only');
    res = await post(`query=${encodeURIComponent('ASK { ?s ?p ?o }')}`, 'application/x-www-form-urlencoded');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.boolean, true);
    // The OpenAPI document says so.
    const document = await as(t.ws.apiKey).get('/api/v1/openapi.json');
    const route = document.body.paths['/api/v1/projects/{project_id}/ontology/sparql'];
    for (const method of ['get', 'post']) {
      assert.match(route[method].responses['400'].description, /does not parse \(malformed_query/, method);
      assert.match(route[method].responses['422'].description, /external_graph_refused.*service_refused/, method);
      assert.match(JSON.stringify(route[method].responses['200'].content), /application\/rdf\+xml/, method);
    }
    const noScope = await newKey(t.ws, { scopes: ['sparql:query'] });
    res = await request('POST', `${t.base}/sparql`, { key: noScope, rawBody: 'CLEAR ALL', headers: { 'Content-Type': 'application/sparql-update' } });
    assert.equal(res.status, 403);
  });

  it('meters an answered query once and keeps no charge for a query that fails while it runs', async () => {
    const key = await newKey(t.ws, { scopes: ['sparql:query'] });
    const apiKeyId = await keyIdOf(key);
    // A charge answered from a charge lease is written by the next flush: this direct read waits for it, as the usage routes do.
    const charges = async () => {
      await env().settledCharges(t.ws.workspaceId);
      return env().db('metered_operations').where({ workspaceId: t.ws.workspaceId, kind: 'sparql_query', apiKeyId });
    };
    const answered = await request('POST', `${t.base}/sparql`, { key, rawBody: 'ASK { ?s ?p ?o }', headers: { 'Content-Type': 'application/sparql-query' } });
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    const [charge] = await charges();
    assert.equal((await charges()).length, 1, 'the charge is committed, or covered by a committed lease, before the answer');
    assert.equal(charge.projectId, t.ws.projectId);
    assert.deepEqual(charge.quantities, { query: 1 });
    // Parses, then fails in evaluation: more rows than one answer may hold.
    const values = Array.from({ length: 10_001 }, (_, i) => i).join(' ');
    const failed = await request('POST', `${t.base}/sparql`, { key, rawBody: `SELECT ?n WHERE { VALUES ?n { ${values} } }`, headers: { 'Content-Type': 'application/sparql-query' } });
    assert.equal(failed.status, 422, JSON.stringify(failed.body));
    assert.equal(failed.body.code, 'result_too_large');
    assert.equal((await charges()).length, 1, 'the failed query’s charge was withdrawn before its answer');
  });

  it('applies INSERT DATA and DELETE DATA on bound records as governed writes, never around them', async () => {
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'write' })).status, 200);
    const writer = await newKey(t.ws, { scopes: ['sparql:query', 'sparql:update', 'data:write', 'data:delete', 'policy:manage'], readPermissions: ['customers.read'] });
    const update = (text: string) => request('POST', `${t.base}/sparql`, { key: writer, rawBody: PREFIXES(baseIri) + text, headers: { 'Content-Type': 'application/sparql-update' } });
    const insert = 'INSERT DATA { <https://example.com/customers/3> :name "Cy" ; :age 30 }';
    let res = await update(insert);
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.code, 'write_policy_missing', 'no policy, no write');
    assert.equal((await as(writer).put(`/api/v1/data-endpoints/${customers}/write-policy`, { allowedOperations: ['upsert', 'delete'] })).status, 201);
    res = await update(insert);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.writeActions[0].status, 'applied');
    assert.deepEqual(res.body.writeActions[0].input.rows, [{ id: 3, full_name: 'Cy', years: 30 }]);
    const sparql = await client(writer);
    const names = async () => (await sparql.query.select(PREFIXES(baseIri) + select)).map((row: Record<string, { value: string }>) => row.name.value);
    assert.deepEqual(await names(), ['Ada', 'Bob, "the builder"', 'Cy']);
    const again = await update(insert);
    assert.equal(again.status, 200);
    assert.equal(again.body.writeActions[0].snapshotAfter.version !== res.body.writeActions[0].snapshotAfter.version, true, 'the same text against the new snapshot is a new action');

    res = await update('DELETE DATA { <https://example.com/customers/3> a :Customer }');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.writeActions[0].input.operation, 'delete');
    assert.deepEqual(await names(), ['Ada', 'Bob, "the builder"']);
    res = await update('INSERT DATA { <https://example.com/customers/4> :name "Di" ');
    assertMalformed(res, 'an update that does not parse, in write mode');
    res = await update('DELETE { ?c :age ?a } WHERE { ?c :age ?a }');
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'update_form_not_supported');
    res = await update('INSERT DATA { :Customer :name "x" }');
    assert.equal(res.status, 422);
    assert.equal(res.body.code, 'update_outside_bound_data', 'the compiled ontology cannot be changed by SPARQL');
  });
});
