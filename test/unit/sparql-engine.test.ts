import assert from 'node:assert/strict';
import { DataFactory, Store } from 'n3';
import { evaluateQuery, KeptParses, parseSparql } from '../../ontology/sparql-engine';
import { negotiate, serializeResult } from '../../ontology/sparql-results';
import { compactEntityIndex, forgetKeptPlans, keptPlanCount } from '../../ontology/sparql-evaluator';

/** The parses the evaluator keeps plans by: this file's own, as a query thread has its own. */
const parses = new KeptParses();

const { namedNode, literal, quad } = DataFactory;
const EX = 'http://example.org/';
const codeOf = async (work: () => Promise<unknown>) => {
  try {
    await work();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('SPARQL engine wiring and result formats', () => {
  const store = new Store([
    quad(namedNode(`${EX}a`), namedNode(`${EX}name`), literal('Ada')),
    quad(namedNode(`${EX}b`), namedNode(`${EX}name`), literal('Bob, "the builder"\nJr')),
    quad(namedNode(`${EX}b`), namedNode(`${EX}age`), literal('52', namedNode('http://www.w3.org/2001/XMLSchema#integer'))),
  ]);
  for (let i = 0; i < 300; i += 1) store.addQuad(quad(namedNode(`${EX}n${i}`), namedNode(`${EX}next`), namedNode(`${EX}n${i + 1}`)));
  const limits = { timeoutMs: 5000, maxResults: 100 };

  it('tells queries from updates, and refuses malformed text, FROM and SERVICE', async () => {
    assert.equal(parseSparql('SELECT * WHERE { ?s ?p ?o }').kind, 'query');
    assert.equal(parseSparql('INSERT DATA { <a:b> <a:c> <a:d> }').kind, 'update');
    assert.equal(await codeOf(async () => parseSparql('SELECT ?x WHERE {')), 'malformed_query');
    assert.equal(await codeOf(async () => parseSparql('SELECT * FROM <http://x/g> WHERE { ?s ?p ?o }')), 'external_graph_refused');
    assert.equal(await codeOf(async () => parseSparql('SELECT * WHERE { SERVICE <http://x/sparql> { ?s ?p ?o } }')), 'service_refused');
    assert.equal(await codeOf(() => evaluateQuery(store, 'CLEAR ALL', limits)), 'update_not_allowed');
  });

  it('keeps a cheap query’s plan for the same stores only, and answers from it as from a new one', async () => {
    forgetKeptPlans();
    const other = new Store([quad(namedNode(`${EX}c`), namedNode(`${EX}name`), literal('Cy'))]);
    const rows = async (over: Store, text: string, keepPlans = true) => {
      const result = await evaluateQuery(over, text, limits, { keepPlans, parses });
      assert.equal(result.kind, 'bindings');
      return result.rows.map((row) => Object.values(row).map((term) => term.value).join(' '));
    };
    // A join, a MINUS (its right side loaded once into the plan), a path (its closures kept in the plan) and DISTINCT with ORDER BY (state of each run).
    const names = `SELECT DISTINCT ?name WHERE { ?s <${EX}name> ?name MINUS { ?s <${EX}age> 52 } } ORDER BY ?name`;
    const reach = `SELECT (COUNT(?b) AS ?n) WHERE { <${EX}n290> <${EX}next>+ ?b }`;
    for (let run = 0; run < 3; run++) {
      assert.deepEqual(await rows(store, names), ['Ada']);
      assert.deepEqual(await rows(store, reach), ['10']);
    }
    assert.equal(keptPlanCount(), 2, 'both plans are kept');
    // The same text over another store is planned for that store: its own answer, then kept for it.
    assert.deepEqual(await rows(other, names), ['Cy']);
    assert.deepEqual(await rows(other, names), ['Cy']);
    assert.deepEqual(await rows(store, names), ['Ada']);
    // Without keepPlans (stores that may change), nothing is kept or reused.
    forgetKeptPlans();
    assert.deepEqual(await rows(store, names, false), ['Ada']);
    assert.equal(keptPlanCount(), 0);
  });

  it('plans again once another store over the same entity index numbers new terms', async () => {
    // A value the data does not hold (UCASE of a name) gets an id of the plan's own, kept in the
    // plan's MINUS table; a store built later over the index (another graph in the same query
    // thread) may number that value, and the next run's values would take the index's id.
    forgetKeptPlans();
    const entityIndex = compactEntityIndex();
    const people = new Store(
      [
        quad(namedNode(`${EX}a`), namedNode(`${EX}name`), literal('alice')),
        quad(namedNode(`${EX}b`), namedNode(`${EX}name`), literal('bob')),
        quad(namedNode(`${EX}x`), namedNode(`${EX}blocked`), literal('alice')),
      ],
      { entityIndex } as never,
    );
    const text = `SELECT ?s WHERE { { ?s <${EX}name> ?n BIND(UCASE(?n) AS ?u) } MINUS { ?t <${EX}blocked> ?b BIND(UCASE(?b) AS ?u) } }`;
    const subjects = async () => {
      const result = await evaluateQuery({ stores: [people] }, text, limits, { keepPlans: true, parses });
      assert.equal(result.kind, 'bindings');
      return result.rows.map((row) => row.s.value);
    };
    assert.deepEqual(await subjects(), [`${EX}b`]);
    assert.deepEqual(await subjects(), [`${EX}b`]);
    assert.equal(keptPlanCount(), 1);
    new Store([quad(namedNode(`${EX}z`), namedNode(`${EX}label`), literal('ALICE'))], { entityIndex } as never);
    assert.deepEqual(await subjects(), [`${EX}b`], 'the blocked name stays out');
  });

  it('stops a query past its result limit or its time limit', async () => {
    assert.equal(await codeOf(() => evaluateQuery(store, 'SELECT * WHERE { ?s ?p ?o }', { timeoutMs: 5000, maxResults: 10 })), 'result_too_large');
    const heavy = `SELECT (COUNT(*) AS ?n) WHERE { ?a <${EX}next>* ?b . ?b <${EX}next>* ?c . ?c <${EX}next>* ?d }`;
    const started = Date.now();
    assert.equal(await codeOf(() => evaluateQuery(store, heavy, { timeoutMs: 300, maxResults: 10 })), 'query_timeout');
    assert.ok(Date.now() - started < 3000, 'the timeout answers promptly');
  });

  it('negotiates by q-values and wildcards, and says when nothing fits', () => {
    assert.equal(negotiate(undefined, 'bindings'), 'application/sparql-results+json');
    assert.equal(negotiate('text/csv;q=0.5, application/sparql-results+xml', 'bindings'), 'application/sparql-results+xml');
    assert.equal(negotiate('text/*', 'bindings'), 'text/csv');
    assert.equal(negotiate('*/*', 'quads'), 'text/turtle');
    assert.equal(negotiate('application/n-triples, text/turtle;q=0.9', 'quads'), 'application/n-triples');
    assert.equal(negotiate('text/csv', 'boolean'), null);
    assert.equal(negotiate('application/sparql-results+json', 'quads'), null);
    assert.equal(negotiate('text/csv;q=0', 'bindings'), null);
  });

  it('writes the W3C formats exactly, escaping CSV, TSV and XML', async () => {
    const result = await evaluateQuery(store, `SELECT ?s ?name ?age WHERE { ?s <${EX}name> ?name OPTIONAL { ?s <${EX}age> ?age } } ORDER BY ?name`, limits);
    assert.equal(await serializeResult(result, 'text/csv'), `s,name,age\r\n${EX}a,Ada,\r\n${EX}b,"Bob, ""the builder""\nJr",52\r\n`);
    assert.equal(await serializeResult(result, 'text/tab-separated-values'), `?s\t?name\t?age\n<${EX}a>\t"Ada"\t\n<${EX}b>\t"Bob, \\"the builder\\"\\nJr"\t52\n`);
    const json = JSON.parse(await serializeResult(result, 'application/sparql-results+json'));
    assert.deepEqual(json.head.vars, ['s', 'name', 'age']);
    assert.deepEqual(json.results.bindings[1].age, { type: 'literal', value: '52', datatype: 'http://www.w3.org/2001/XMLSchema#integer' });
    assert.equal(json.results.bindings[0].age, undefined, 'unbound variables are left out');
    const xml = await serializeResult(result, 'application/sparql-results+xml');
    assert.match(xml, /<literal>Bob, &quot;the builder&quot;\nJr<\/literal>/);
    const ask = await evaluateQuery(store, `ASK { <${EX}a> <${EX}name> "Ada" }`, limits);
    assert.equal(await serializeResult(ask, 'application/sparql-results+json'), '{"head":{},"boolean":true}');
    const graph = await evaluateQuery(store, `CONSTRUCT { ?s <${EX}label> ?n } WHERE { ?s <${EX}name> ?n }`, limits);
    assert.match(await serializeResult(graph, 'application/n-triples'), new RegExp(`<${EX}a> <${EX}label> "Ada" \\.`));
    const jsonld = JSON.parse(await serializeResult(graph, 'application/ld+json'));
    assert.equal(jsonld.length, 2);
  });
});
