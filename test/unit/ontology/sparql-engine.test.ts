import assert from 'node:assert/strict';
import type * as RDF from '@rdfjs/types';
import { DataFactory, Parser, Store } from 'n3';
import { isomorphic } from 'rdf-isomorphic';
import { RdfXmlParser } from 'rdfxml-streaming-parser';
import { evaluateQuery, evaluateUpdate, parseSparql, SparqlResult } from '../../../ontology/sparql-engine';
import { negotiate, serializeResult } from '../../../ontology/sparql-results';
import { compactEntityIndex } from '../../../ontology/sparql-evaluator';
import { FIRST_COMPACT_ENTITY_NUMBER } from '../../../ontology/sparql-evaluator/n3-internals';

// Limits, refusals, updates and the exact result formats of ontology/sparql-engine.ts and
// sparql-results.ts (test/unit/sparql-engine.test.ts covers the basic wiring).

const { namedNode, literal, blankNode, quad } = DataFactory;
const EX = 'http://example.org/';
const XSD = 'http://www.w3.org/2001/XMLSchema#';
const limits = { timeoutMs: 5000, maxResults: 1000 };

const failure = async (work: () => unknown): Promise<{ code?: string; message: string; details?: Record<string, unknown> } | undefined> => {
  try {
    await work();
    return undefined;
  } catch (error) {
    return error as { code?: string; message: string; details?: Record<string, unknown> };
  }
};
const codeOf = async (work: () => unknown) => (await failure(work))?.code;

/** CPU time this process spends over the next `ms` (the engine's work after a query was stopped). */
async function cpuMsOver(ms: number): Promise<number> {
  const start = process.cpuUsage();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000;
}

/** 300 subjects on one predicate: joining three patterns on it makes 27 million rows. */
function crossProductStore(): Store {
  const store = new Store();
  for (let i = 0; i < 300; i += 1) store.addQuad(quad(namedNode(`${EX}s${i}`), namedNode(`${EX}p`), literal(`v${i}`)));
  return store;
}
const CROSS = `?a <${EX}p> ?x . ?b <${EX}p> ?y . ?c <${EX}p> ?z`;

describe('SPARQL engine: limits, refusals and updates', function () {
  this.timeout(30_000);

  it('stops the whole evaluation at the time limit, aggregates and ASK included', async () => {
    const store = crossProductStore();
    for (const heavy of [`SELECT (COUNT(*) AS ?n) WHERE { ${CROSS} FILTER(?x != ?y) }`, `ASK { ${CROSS} FILTER(?x = "none" || STR(?y) = "none" || ?z = "none") }`]) {
      const started = Date.now();
      assert.equal(await codeOf(() => evaluateQuery(store, heavy, { timeoutMs: 300, maxResults: 10 })), 'query_timeout', heavy);
      assert.ok(Date.now() - started < 3000, 'the timeout answers promptly');
      // Destroying only the result stream would leave the aggregate draining its input at 100% CPU.
      const cpu = await cpuMsOver(1000);
      assert.ok(cpu < 400, `the engine stopped working after the timeout (${cpu.toFixed(0)} ms of CPU in the next second)`);
    }
  });

  it('numbers the terms of a compact entity index past V8’s flat-array gap, and answers over its stores as over any store', async () => {
    const data = new Parser().parse(`@prefix : <http://example.com/> . :a :p 1, 2 ; :q :b . :b :p 3 .`);
    const index = compactEntityIndex();
    const compact = new Store(data, { entityIndex: index } as never);
    const numbers = Object.values((index as unknown as { _ids: Record<string, number> })._ids).filter((number) => number !== 1);
    assert.ok(numbers.length > 0 && numbers.every((number) => number >= FIRST_COMPACT_ENTITY_NUMBER), `every term past the gap: ${numbers.join(', ')}`);
    const query = 'PREFIX : <http://example.com/> SELECT ?s (SUM(?v) AS ?total) WHERE { ?s :p ?v OPTIONAL { ?s :q ?o } } GROUP BY ?s ORDER BY ?s';
    const limits = { timeoutMs: 5000, maxResults: 10 };
    assert.deepEqual(await evaluateQuery(compact, query, limits), await evaluateQuery(new Store(data), query, limits));
  });

  it('refuses results past maxResults, for graphs as for rows', async () => {
    const store = crossProductStore();
    assert.equal(await codeOf(() => evaluateQuery(store, 'CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }', { timeoutMs: 5000, maxResults: 299 })), 'result_too_large');
    const exact = await evaluateQuery(store, 'CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }', { timeoutMs: 5000, maxResults: 300 });
    assert.equal(exact.kind === 'quads' && exact.quads.length, 300, 'exactly maxResults is allowed');
  });

  it('says on which line a query stops parsing, and refuses empty text', async () => {
    const malformed = await failure(() => parseSparql('SELECT * WHERE {\n  ?s ?p ?o .\n  FILTER(?s = )\n}'));
    assert.equal(malformed?.code, 'malformed_query');
    assert.equal((malformed as { kind?: string }).kind, 'bad_request', 'a text that does not parse is a 400, as the SPARQL 1.1 Protocol requires');
    assert.deepEqual(malformed?.details, { line: 3 });
    assert.match(malformed!.message, /at line 3: unexpected '\)' near “.*FILTER\(\?s = \)/);
    assert.match((await failure(() => parseSparql('SELECT * WHERE { ?s ?p ?o ')))!.message, /at line 1: unexpected end of text/);
    assert.equal(await codeOf(() => parseSparql('')), 'malformed_query');
    assert.equal(await codeOf(() => parseSparql('PREFIX ex: <http://example.org/>')), 'malformed_query');
    assert.equal(await codeOf(() => evaluateQuery(new Store(), '   ', limits)), 'malformed_query');
    assert.equal(((await failure(() => parseSparql(''))) as { kind?: string }).kind, 'bad_request');
  });

  it('classifies queries and updates for the scope check', () => {
    const types = ['SELECT * {}', 'ASK {}', 'CONSTRUCT WHERE { ?s ?p ?o }', 'DESCRIBE <http://example.org/a>'].map((text) => {
      const parsed = parseSparql(text);
      return parsed.kind === 'query' ? parsed.queryType : parsed.kind;
    });
    assert.deepEqual(types, ['SELECT', 'ASK', 'CONSTRUCT', 'DESCRIBE']);
    assert.equal(parseSparql('CLEAR DEFAULT ; DROP SILENT GRAPH <http://example.org/g>').kind, 'update');
  });

  it('refuses SERVICE anywhere, and FROM unless the caller allows dataset clauses', async () => {
    const store = new Store([
      quad(namedNode(`${EX}a`), namedNode(`${EX}p`), literal('default')),
      quad(namedNode(`${EX}a`), namedNode(`${EX}p`), literal('in g'), namedNode(`${EX}g`)),
    ]);
    const service = `<http://127.0.0.1:9/sparql>`;
    assert.equal(await codeOf(() => parseSparql(`SELECT * { ?s ?p ?o OPTIONAL { SERVICE ${service} { ?s ?q ?r } } }`)), 'service_refused');
    assert.equal(await codeOf(() => parseSparql(`SELECT * { ?s ?p ?o FILTER EXISTS { SERVICE ${service} { ?s ?q ?r } } }`)), 'service_refused');
    assert.equal(await codeOf(() => parseSparql(`INSERT { ?s ?p ?o } WHERE { SERVICE ${service} { ?s ?p ?o } }`)), 'service_refused');
    assert.equal(await codeOf(() => evaluateQuery(store, `SELECT * FROM NAMED <${EX}g> { GRAPH ?g { ?s ?p ?o } }`, limits)), 'external_graph_refused');
    // The W3C harness allows them: FROM then selects a graph of the store, it fetches nothing.
    const fromG = await evaluateQuery(store, `SELECT ?o FROM <${EX}g> { ?s ?p ?o }`, limits, { allowDatasetClauses: true });
    assert.deepEqual(fromG.kind === 'bindings' && fromG.rows.map((row) => row.o.value), ['in g']);
  });

  it('applies updates to the store, and a failed or timed-out one not at all', async () => {
    const store = new Store([quad(namedNode(`${EX}a`), namedNode(`${EX}p`), literal('old'))]);
    await evaluateUpdate(store, `DELETE { ?s <${EX}p> ?o } INSERT { ?s <${EX}p> "new" ; <${EX}q> ?o } WHERE { ?s <${EX}p> ?o }`, limits);
    assert.deepEqual(store.getQuads(null, null, null, null).map((q) => `${q.predicate.value} ${q.object.value}`).sort(), [`${EX}p new`, `${EX}q old`]);

    const heavy = crossProductStore();
    assert.equal(await codeOf(() => evaluateUpdate(heavy, `INSERT { ?a <${EX}q> ?z } WHERE { ${CROSS} FILTER(?x != ?y) }`, { timeoutMs: 300 })), 'query_timeout');
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.equal(heavy.size, 300, 'nothing of the timed-out update reached the store, then or later');

    assert.equal(await codeOf(() => evaluateUpdate(store, 'LOAD <http://127.0.0.1:9/data.ttl>', limits)), 'load_refused');
    assert.equal(await codeOf(() => evaluateUpdate(store, 'SELECT * {}', limits)), 'query_not_update');
    assert.equal(await codeOf(() => evaluateQuery(store, 'INSERT DATA { <a:b> <a:c> <a:d> }', limits)), 'update_not_allowed');
  });
});

describe('SPARQL result negotiation', () => {
  it('honours q-values, specificity and wildcards', () => {
    assert.equal(negotiate('application/*', 'bindings'), 'application/sparql-results+json');
    assert.equal(negotiate('*/*;q=0.1, text/csv', 'bindings'), 'text/csv');
    assert.equal(negotiate('text/*;q=0, */*', 'bindings'), 'application/sparql-results+json');
    assert.equal(negotiate('text/tab-separated-values;q=0.8, text/*;q=0.9', 'bindings'), 'text/csv', 'text/* ranks text/csv above the named TSV');
    assert.equal(negotiate('application/sparql-results+xml, application/sparql-results+json', 'bindings'), 'application/sparql-results+xml', 'ties go to the client’s order');
    assert.equal(negotiate('application/ld+json;q=0.9, text/turtle;q=0.8', 'quads'), 'application/ld+json');
    assert.equal(negotiate('text/csv, */*;q=0.1', 'boolean'), 'application/sparql-results+json', 'ASK has no CSV form');
    assert.equal(negotiate('application/rdf+xml', 'quads'), 'application/rdf+xml', 'SPARQLWrapper’s Accept for CONSTRUCT');
    // rdflib's SPARQLStore sends one Accept for every query form.
    assert.equal(negotiate('application/rdf+xml, application/sparql-results+xml', 'quads'), 'application/rdf+xml', 'rdflib’s Accept, for a graph');
    assert.equal(negotiate('application/rdf+xml, application/sparql-results+xml', 'bindings'), 'application/sparql-results+xml', 'rdflib’s Accept, for rows');
    assert.equal(negotiate('application/rdf+xml;q=0.9, text/turtle;q=0.8', 'quads'), 'application/rdf+xml');
    assert.equal(negotiate('application/rdf+xml;q=0.5, application/n-triples', 'quads'), 'application/n-triples');
    assert.equal(negotiate('application/xml', 'quads'), 'application/rdf+xml', 'XML for a graph is RDF/XML');
    assert.equal(negotiate('text/xml', 'bindings'), 'application/sparql-results+xml', 'XML for rows is the results format');
    assert.equal(negotiate('application/*', 'quads'), 'application/n-triples', 'the offered order breaks ties, as before');
  });

  it('answers null (406) when nothing offered is acceptable', () => {
    assert.equal(negotiate('text/tab-separated-values', 'boolean'), null);
    assert.equal(negotiate('*/*;q=0', 'bindings'), null);
    assert.equal(negotiate('text/html', 'quads'), null);
    assert.equal(negotiate('text/turtle', 'bindings'), null);
    assert.equal(negotiate('application/rdf+xml', 'bindings'), null);
    assert.equal(negotiate('application/rdf+xml', 'boolean'), null);
  });
});

describe('SPARQL result formats', () => {
  const s = namedNode(`${EX}s`);
  const result: SparqlResult = {
    kind: 'bindings',
    variables: ['s', 'label', 'n'],
    rows: [
      { s, label: literal('a "quoted", comma\r\nand <b>&</b>', 'en'), n: literal('-5', namedNode(`${XSD}integer`)) },
      { s: blankNode('x1'), n: literal('1', namedNode(`${XSD}boolean`)) },
      { label: literal('1.', namedNode(`${XSD}decimal`)), n: literal('.5e3', namedNode(`${XSD}double`)) },
    ],
  };

  it('writes SPARQL Results JSON', async () => {
    assert.equal(
      await serializeResult(result, 'application/sparql-results+json'),
      JSON.stringify({
        head: { vars: ['s', 'label', 'n'] },
        results: {
          bindings: [
            { s: { type: 'uri', value: `${EX}s` }, label: { type: 'literal', value: 'a "quoted", comma\r\nand <b>&</b>', 'xml:lang': 'en' }, n: { type: 'literal', value: '-5', datatype: `${XSD}integer` } },
            { s: { type: 'bnode', value: 'x1' }, n: { type: 'literal', value: '1', datatype: `${XSD}boolean` } },
            { label: { type: 'literal', value: '1.', datatype: `${XSD}decimal` }, n: { type: 'literal', value: '.5e3', datatype: `${XSD}double` } },
          ],
        },
      }),
    );
    assert.equal(await serializeResult({ kind: 'boolean', value: false }, 'application/sparql-results+json'), '{"head":{},"boolean":false}');
  });

  it('writes SPARQL Results XML, escaping markup and keeping CR', async () => {
    assert.equal(
      await serializeResult(result, 'application/sparql-results+xml'),
      '<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#"><head><variable name="s"/><variable name="label"/><variable name="n"/></head><results>\n' +
        `<result><binding name="s"><uri>${EX}s</uri></binding><binding name="label"><literal xml:lang="en">a &quot;quoted&quot;, comma&#13;\nand &lt;b&gt;&amp;&lt;/b&gt;</literal></binding><binding name="n"><literal datatype="${XSD}integer">-5</literal></binding></result>\n` +
        `<result><binding name="s"><bnode>x1</bnode></binding><binding name="n"><literal datatype="${XSD}boolean">1</literal></binding></result>\n` +
        `<result><binding name="label"><literal datatype="${XSD}decimal">1.</literal></binding><binding name="n"><literal datatype="${XSD}double">.5e3</literal></binding></result>\n` +
        '</results></sparql>\n',
    );
    assert.equal(await serializeResult({ kind: 'boolean', value: true }, 'application/sparql-results+xml'), '<?xml version="1.0"?>\n<sparql xmlns="http://www.w3.org/2005/sparql-results#"><head/><boolean>true</boolean></sparql>\n');
    const control: SparqlResult = { kind: 'bindings', variables: ['v'], rows: [{ v: literal('bell\u0007') }] };
    assert.equal(await codeOf(() => serializeResult(control, 'application/sparql-results+xml')), 'unrepresentable_result');
    assert.match(await serializeResult(control, 'application/sparql-results+json'), /bell\\u0007/, 'JSON carries it');
  });

  it('writes CSV with RFC 4180 quoting and CRLF line ends', async () => {
    assert.equal(await serializeResult(result, 'text/csv'), `s,label,n\r\n${EX}s,"a ""quoted"", comma\r\nand <b>&</b>",-5\r\n_:x1,,1\r\n,1.,.5e3\r\n`);
  });

  it('writes TSV terms as Turtle, bare numbers only where Turtle reads them back the same', async () => {
    assert.equal(
      await serializeResult(result, 'text/tab-separated-values'),
      `?s\t?label\t?n\n<${EX}s>\t"a \\"quoted\\", comma\\r\\nand <b>&</b>"@en\t-5\n_:x1\t\t"1"^^<${XSD}boolean>\n\t"1."^^<${XSD}decimal>\t.5e3\n`,
    );
    const odd: SparqlResult = { kind: 'bindings', variables: ['i'], rows: [{ i: namedNode('http://example.org/a b>c') }] };
    assert.equal(await serializeResult(odd, 'text/tab-separated-values'), '?i\n<http://example.org/a\\u0020b\\u003Ec>\n');
  });

  it('writes graphs as Turtle, N-Triples and expanded JSON-LD', async () => {
    const quads = [quad(s, namedNode(`${EX}label`), literal('été', 'fr')), quad(s, namedNode(`${EX}next`), blankNode('n'))];
    const graph: SparqlResult = { kind: 'quads', quads };
    const reread = (text: string, format: string): RDF.Quad[] => new Parser({ format }).parse(text);
    assert.ok(isomorphic(reread(await serializeResult(graph, 'text/turtle'), 'text/turtle'), quads));
    assert.equal(await serializeResult(graph, 'application/n-triples'), `<${EX}s> <${EX}label> "été"@fr .\n<${EX}s> <${EX}next> _:n .\n`);
    const jsonld = JSON.parse(await serializeResult(graph, 'application/ld+json'));
    assert.deepEqual(jsonld, [{ '@id': `${EX}s`, [`${EX}label`]: [{ '@value': 'été', '@language': 'fr' }], [`${EX}next`]: [{ '@id': '_:n' }] }]);
  });
  describe('RDF/XML', () => {
    const readRdfXml = (text: string): Promise<RDF.Quad[]> =>
      new Promise((resolve, reject) => {
        const quads: RDF.Quad[] = [];
        const parser = new RdfXmlParser();
        parser.on('data', (q: RDF.Quad) => quads.push(q));
        parser.on('error', reject);
        parser.on('end', () => resolve(quads));
        parser.end(text);
      });
    const RDF_NS = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
    const rdfXml = (quads: RDF.Quad[]) => serializeResult({ kind: 'quads', quads }, 'application/rdf+xml');

    it('writes every kind of term so that an RDF/XML parser reads the same triples', async () => {
      const b = blankNode('n3-7 not an NCName');
      const quads = [
        quad(s, namedNode(`${RDF_NS}type`), namedNode(`${EX}Thing`)),
        quad(s, namedNode(`${EX}label`), literal('été', 'fr')),
        quad(s, namedNode(`${EX}label`), literal('a "quoted", <b>&amp;</b> ]]> \'x\'\r\n\ttab  ')),
        quad(s, namedNode(`${EX}label`), literal('')),
        quad(s, namedNode(`${EX}n`), literal('-5', namedNode(`${XSD}integer`))),
        quad(s, namedNode(`${EX}n`), literal('1.', namedNode(`${XSD}decimal`))),
        quad(s, namedNode(`${EX}n`), literal('<a>x</a>', namedNode(`${RDF_NS}XMLLiteral`))),
        quad(s, namedNode(`${EX}n`), literal('s', namedNode(`${XSD}string`))),
        quad(s, namedNode('http://example.org/ns#1st-part.v2'), namedNode(`${EX}o?a=1&b='2'`)),
        quad(s, namedNode('urn:x:y:z9'), b),
        quad(b, namedNode(`${RDF_NS}_1`), namedNode(`${EX}first`)),
        quad(b, namedNode('http://example.org/ü/名前'), literal('x', 'en-GB')),
        quad(blankNode('other'), namedNode(`${EX}next`), b),
      ];
      const xml = await rdfXml(quads);
      assert.match(xml, /^<\?xml version="1\.0" encoding="utf-8"\?>\n<rdf:RDF xmlns:rdf="http:\/\/www\.w3\.org\/1999\/02\/22-rdf-syntax-ns#" /);
      assert.match(xml, /rdf:nodeID="b0"/, 'blank nodes renamed to NCNames');
      const read = await readRdfXml(xml);
      assert.equal(read.length, quads.length);
      assert.ok(isomorphic(read, quads), xml);
      assert.equal(await rdfXml([]), `<?xml version="1.0" encoding="utf-8"?>\n<rdf:RDF xmlns:rdf="${RDF_NS}">\n</rdf:RDF>\n`);
    });

    it('refuses triples RDF/XML cannot write, naming the formats that can', async () => {
      for (const predicate of [`${EX}items/1`, `${EX}`, `${RDF_NS}li`, `${RDF_NS}about`, 'http://www.w3.org/2000/xmlns/x']) {
        const refused = await failure(() => rdfXml([quad(s, namedNode(predicate), literal('x'))]));
        assert.equal(refused?.code, 'unrepresentable_result', predicate);
        assert.match(refused!.message, /text\/turtle or application\/n-triples/, predicate);
      }
      const control = await failure(() => rdfXml([quad(s, namedNode(`${EX}p`), literal('bell \u0007'))]));
      assert.equal(control?.code, 'unrepresentable_result');
      assert.match(control!.message, /text\/turtle or application\/n-triples/);
    });
  });
});
