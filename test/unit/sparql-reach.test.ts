import assert from 'node:assert/strict';
import { Parser, SparqlQuery } from 'sparqljs';
import { firstSolutionsOf, reachOf, ReachPattern } from '../../ontology/sparql-reach';
import { TableReadSlots } from '../../services/ontology/sparql-reach-reads';
import { SettableClock } from '../../core/clock';

// Which patterns of a query may narrow which when bound tables are read per query: narrowing is
// a semi-join, sound only where the narrowed pattern's solutions are joined with the narrowing
// one's (services/ontology/sparql-reach-reads.ts reads by these sets).

const EX = 'http://example.org/';
const parse = (text: string) => new Parser().parse(`PREFIX : <${EX}>\n${text}`) as SparqlQuery;
const reach = (text: string) => reachOf(parse(text));

/** The pattern with this predicate (its local name) and the predicates of the patterns that may narrow it. */
function narrowing(patterns: ReachPattern[], local: string): string[] {
  const pattern = patterns.find((candidate) => candidate.predicate === `${EX}${local}`);
  assert.ok(pattern, `a pattern with :${local}`);
  return pattern.narrowedBy.map((index) => patterns[index].predicate!.slice(EX.length)).sort();
}

describe('What a SPARQL query reaches of bound tables', () => {
  it('lets a group’s own triples narrow each other, whatever their order', () => {
    const patterns = reach('SELECT * WHERE { ?o :product ?p . ?p :label ?l . ?o :price ?x }')!;
    assert.deepEqual(narrowing(patterns, 'label'), ['price', 'product']);
    assert.deepEqual(narrowing(patterns, 'product'), ['label', 'price']);
  });

  it('narrows an OPTIONAL or MINUS only by the patterns before it, which its left join or difference sees', () => {
    const patterns = reach('SELECT * WHERE { ?p :label ?l OPTIONAL { ?p :comment ?c } MINUS { ?p :hidden ?h } ?p :rank ?r }')!;
    assert.deepEqual(narrowing(patterns, 'comment'), ['label']);
    assert.deepEqual(narrowing(patterns, 'hidden'), ['label']);
    // The required triples after them still narrow the ones before (inner joins).
    assert.deepEqual(narrowing(patterns, 'label'), ['rank']);
  });

  it('narrows UNION branches, plain groups and EXISTS by every required triple around them', () => {
    const patterns = reach('SELECT * WHERE { { ?p :a ?x } UNION { ?p :b ?y } FILTER NOT EXISTS { ?p :c ?z } ?p :label ?l }')!;
    assert.deepEqual(narrowing(patterns, 'a'), ['label']);
    assert.deepEqual(narrowing(patterns, 'b'), ['label']);
    assert.deepEqual(narrowing(patterns, 'c'), ['label']);
    // A branch's triples narrow nothing outside it: only one branch holds for a solution.
    assert.deepEqual(narrowing(patterns, 'label'), []);
  });

  it('keeps a subquery apart both ways: its LIMIT chooses among its own solutions', () => {
    const patterns = reach('SELECT * WHERE { ?p :label ?l { SELECT ?p WHERE { ?p :rank ?r } ORDER BY ?r LIMIT 3 } }')!;
    assert.deepEqual(narrowing(patterns, 'rank'), []);
    assert.deepEqual(narrowing(patterns, 'label'), []);
  });

  it('reads numeric FILTER bounds of a group onto the triples that bind the variable', () => {
    const patterns = reach('SELECT * WHERE { ?o :price ?x ; :days ?d FILTER (?x < 10 && 2 >= ?d) FILTER (?x > "a") }')!;
    assert.deepEqual(patterns.find((p) => p.predicate === `${EX}price`)!.objectBounds, [{ op: '<', value: '10' }]);
    assert.deepEqual(patterns.find((p) => p.predicate === `${EX}days`)!.objectBounds, [{ op: '<=', value: '2' }]);
    // A bound inside an OPTIONAL is the OPTIONAL's, not its enclosing group's.
    const optional = reach('SELECT * WHERE { ?o :price ?x OPTIONAL { ?o :days ?d FILTER (?x < 10) } }')!;
    assert.deepEqual(optional.find((p) => p.predicate === `${EX}price`)!.objectBounds, []);
  });

  it('reads a path’s steps whole but its first plain step from the path’s subject', () => {
    const patterns = reach('SELECT * WHERE { ?p :label ?l ; :type/:parent* :Root }')!;
    assert.deepEqual(narrowing(patterns, 'type'), ['label']);
    assert.deepEqual(narrowing(patterns, 'parent'), []);
  });

  it('does not analyse DESCRIBE or GRAPH: such a query reads its tables whole', () => {
    assert.equal(reach('DESCRIBE <http://example.org/x>'), undefined);
    assert.equal(reach('SELECT * WHERE { GRAPH ?g { ?s ?p ?o } }'), undefined);
    assert.ok(reach('ASK { ?s ?p ?o }'));
  });

  it('answers from its first solutions only a query any OFFSET + LIMIT of its one BGP’s solutions answers', () => {
    const first = (text: string) => firstSolutionsOf(parse(text));
    assert.equal(first('SELECT * WHERE { ?s ?p ?o } LIMIT 10'), 10);
    assert.equal(first('SELECT ?s WHERE { ?s :price ?p ; :label ?l } LIMIT 7 OFFSET 3'), 10);
    assert.equal(first('CONSTRUCT { ?s :p ?o } WHERE { ?s :q ?o } LIMIT 4'), 4);
    assert.equal(first('ASK { ?s :price ?p }'), 1);
    // ASK after an OFFSET is true only when a solution is left past it.
    assert.equal(first('ASK { ?s :price ?p } OFFSET 5'), 6);
    for (const text of [
      'SELECT * WHERE { ?s ?p ?o }', // no LIMIT: every solution
      'SELECT * WHERE { ?s ?p ?o } LIMIT 0',
      'ASK { ?s ?p ?o } LIMIT 0',
      'SELECT * WHERE { ?s ?p ?o } ORDER BY ?s LIMIT 10',
      'SELECT DISTINCT ?p WHERE { ?s ?p ?o } LIMIT 10',
      'SELECT REDUCED ?p WHERE { ?s ?p ?o } LIMIT 10',
      'SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o } LIMIT 10',
      'SELECT ?s WHERE { ?s ?p ?o } GROUP BY ?s LIMIT 10',
      'SELECT (STR(?o) AS ?t) WHERE { ?s ?p ?o } LIMIT 10',
      'SELECT * WHERE { ?s ?p ?o } LIMIT 10 VALUES ?s { :a }',
      'SELECT * WHERE { ?s ?p ?o FILTER (?o > 1) } LIMIT 10',
      'SELECT * WHERE { ?s :p ?o OPTIONAL { ?s :q ?r } } LIMIT 10',
      'SELECT * WHERE { ?s :p ?o . ?o :q ?r } LIMIT 10', // a join of two subjects
      'SELECT * WHERE { ?s :p/:q ?o } LIMIT 10',
      'SELECT * WHERE { ?s ?p ?o } LIMIT 10001',
      'DESCRIBE ?s WHERE { ?s ?p ?o } LIMIT 1',
    ]) assert.equal(first(text), undefined, text);
  });

  it('holds each workspace to its table reads at once, answering more with a retry time', () => {
    const clock = new SettableClock();
    clock.set(0);
    const slots = new TableReadSlots(clock);
    const first = slots.take('w1', 2, 10_000);
    clock.set(1_000);
    slots.take('w1', 2, 10_000);
    clock.set(2_500);
    assert.throws(() => slots.take('w1', 2, 10_000), (error: { code: string; details: { retryAfterSeconds: number; limit: number } }) => error.code === 'sparql_concurrency_limit' && error.details.retryAfterSeconds === 8 && error.details.limit === 2);
    // Another workspace has slots of its own.
    slots.take('w2', 2, 10_000)();
    first();
    first(); // releasing twice frees one slot
    clock.set(3_000);
    slots.take('w1', 2, 10_000);
    assert.throws(() => slots.take('w1', 2, 10_000));
  });
});
