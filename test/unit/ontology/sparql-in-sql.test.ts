import assert from 'node:assert/strict';
import type { BindingMapping, PackageTerms } from '../../../db/models';
import { parseSparql } from '../../../ontology/sparql-engine';
import { sqlFormOf } from '../../../services/ontology/sparql-forms-in-sql';
import { NarrowedTest, runSqlOver, SqlQuery, sqlQueryOf, SqlSource } from '../../../services/ontology/sparql-in-sql';

// The statements PostgreSQL is given for SPARQL over bound tables (services/ontology/sparql-in-sql.ts),
// read without running them: where the solutions are made distinct, a star that only its link ties
// to the rest is a correlated EXISTS (a semi-join), not a join whose copies DISTINCT removes.
// test/integration/ontology/sparql-in-sql.test.ts checks the answers against the evaluator's.

const BASE = 'https://example.com/ontology/';
const PREFIXES = `PREFIX : <${BASE}>\n`;
const BINDINGS: Array<{ termId: string; mapping: BindingMapping }> = [
  { termId: 'Offer', mapping: { subjectTemplate: 'https://example.com/offers/{id}', properties: { deliveryDays: 'delivery_days' }, links: { vendor: { field: 'vendor', targetTemplate: 'https://example.com/vendors/{vendor}' } } } },
  { termId: 'Vendor', mapping: { subjectTemplate: 'https://example.com/vendors/{id}', properties: { vendorLabel: 'label' } } },
];
const TERMS: PackageTerms = {
  classes: ['Offer', 'Vendor'],
  properties: { deliveryDays: { domain: 'Offer', datatype: 'xsd:integer' }, vendorLabel: { domain: 'Vendor', datatype: 'xsd:string' } },
  links: { vendor: { from: 'Offer', to: 'Vendor' } },
};
const BENCH_WHERE = '?offer :vendor ?vendor ; :deliveryDays ?days . FILTER (?days <= 2) ?vendor :vendorLabel ?label .';

/** The query as sqlQueryOf translates it over the two bindings (an ASK as its forms make it). */
function translated(text: string): SqlQuery {
  const parsed = parseSparql(`${PREFIXES}${text}`);
  if (parsed.kind !== 'query') throw new Error(`${text} is no query`);
  const compile = (select: Parameters<typeof sqlQueryOf>[0]) => sqlQueryOf(select, BINDINGS, () => ({ predicates: new Set(), types: new Set() }), TERMS, BASE);
  const form = sqlFormOf(parsed.parsed, compile);
  assert.ok(form, `${text} is translated`);
  return form.inSql;
}

/**
 * The statements made for the query over tables keyed by their subject fields: the one-scan one,
 * then (its check answering that the tables hold arrays) the one of a relation per triple. Each
 * narrowing the sources are asked for is `narrowed_<field>`, so the statements show where it went.
 */
async function statementsOf(text: string): Promise<{ statements: string[]; narrowed: NarrowedTest[] }> {
  const narrowed: NarrowedTest[] = [];
  const source = (table: string): SqlSource => ({
    records: () => `${table} WHERE valid_to IS NULL`,
    field: (name) => ({ json: `data -> '${name}'`, text: `data ->> '${name}'` }),
    primaryKey: ['id'],
    narrowing: (field, test) => {
      narrowed.push(test);
      return `narrowed_${field}`;
    },
  });
  const statements: string[] = [];
  await runSqlOver(async (sql) => {
    statements.push(sql);
    return statements.length === 1 ? [{ unfused: true, odd: false }] : [];
  }, translated(text), [source('offers'), source('vendors')]);
  assert.equal(statements.length, 2, 'the one-scan statement, then the one per triple');
  return { statements, narrowed };
}

/** The statement's solutions (the answer_solutions CTE), split into what its EXISTS subqueries read and the rest. */
function solutionsOf(statement: string): { exists: string[]; outside: string } {
  const start = statement.indexOf('answer_solutions AS (');
  assert.ok(start >= 0, 'the statement has its solutions');
  const exists: string[] = [];
  let outside = '';
  let depth = 0;
  for (let at = start + 'answer_solutions AS ('.length; depth >= 0 && at < statement.length; ) {
    if (statement.startsWith('EXISTS (', at)) {
      // To the parenthesis that closes it.
      let inner = 0;
      let end = at + 'EXISTS '.length;
      do {
        if (statement[end] === '(') inner++;
        if (statement[end] === ')') inner--;
        end++;
      } while (inner > 0);
      exists.push(statement.slice(at, end));
      at = end;
      continue;
    }
    if (statement[at] === '(') depth++;
    if (statement[at] === ')') depth--;
    outside += statement[at];
    at++;
  }
  return { exists, outside };
}

/** The offers star's relations: its one scan, or its triples' relations (star 0: the first subject). */
const OFFERS = /\bstar0\b|\bv0_\d+\b/;
const VENDORS = /\bstar1\b|\bv1_\d+\b/;

describe('The statements SPARQL over bound tables is answered by', () => {
  it('reads the bench’s distinct vendors of fast-delivery offers as a semi-join: the offers star is an EXISTS on the vendor, its FILTER and narrowing with it', async () => {
    const { statements, narrowed } = await statementsOf(`SELECT DISTINCT ?vendor ?label WHERE { ${BENCH_WHERE} } ORDER BY ?label ?vendor LIMIT 10`);
    for (const statement of statements) {
      const { exists, outside } = solutionsOf(statement);
      assert.equal(exists.length, 1, statement);
      assert.match(exists[0], OFFERS, 'the offers are read in the EXISTS');
      assert.doesNotMatch(outside, OFFERS, 'and joined nowhere else');
      assert.match(outside, VENDORS, 'the vendors are the solutions');
      // The link's condition and the FILTER on the offers' days are the EXISTS's.
      assert.match(exists[0], /\.o\d* = (star1|v1_\d+)\.s/);
      assert.match(exists[0], /<= \$\d+::numeric/);
      assert.doesNotMatch(outside, /<= \$\d+::numeric/);
      assert.match(statement, /narrowed_delivery_days/, 'the FILTER still narrows the offers read');
    }
    assert.ok(narrowed.some((test) => test.op === '<=' && test.value === '2'));
  });

  it('reads the star whose subject another star’s link names as the EXISTS when that star is the projected one, and an ASK so', async () => {
    for (const text of [`SELECT DISTINCT ?offer WHERE { ${BENCH_WHERE} }`, `ASK { ${BENCH_WHERE} }`]) {
      const { statements } = await statementsOf(text);
      for (const statement of statements) {
        const { exists, outside } = solutionsOf(statement);
        assert.equal(exists.length, 1, `${text}: ${statement}`);
        assert.match(exists[0], VENDORS, text);
        assert.doesNotMatch(outside, VENDORS, text);
        assert.match(outside, OFFERS, text);
      }
    }
  });

  it('joins the stars where every solution counts, a star’s variable is projected, or a FILTER reads both stars', async () => {
    for (const text of [
      `SELECT ?vendor ?label WHERE { ${BENCH_WHERE} }`,
      `SELECT DISTINCT ?vendor ?label ?days WHERE { ${BENCH_WHERE} }`,
      `SELECT DISTINCT ?offer ?label WHERE { ${BENCH_WHERE} }`,
      `SELECT ?label (COUNT(DISTINCT ?vendor) AS ?n) WHERE { ${BENCH_WHERE} } GROUP BY ?label`,
      'SELECT DISTINCT ?vendor WHERE { ?offer :vendor ?vendor ; :deliveryDays ?days . ?vendor :vendorLabel ?label FILTER (?days <= 2 || ?label = "x") }',
      'SELECT DISTINCT ?vendor WHERE { ?offer :vendor ?vendor . ?vendor :vendorLabel ?label OPTIONAL { ?offer :deliveryDays ?days } }',
    ]) {
      const { statements } = await statementsOf(text);
      for (const statement of statements) {
        const { exists, outside } = solutionsOf(statement);
        assert.equal(exists.length, 0, `${text}: ${statement}`);
        assert.match(outside, OFFERS, text);
        assert.match(outside, VENDORS, text);
      }
    }
  });
});
