import assert from 'node:assert/strict';
import type * as RDF from '@rdfjs/types';
import fc from 'fast-check';
import { DataFactory, Parser, Quad, Store, Writer } from 'n3';
import * as oxigraph from 'oxigraph';
import { isomorphic } from 'rdf-isomorphic';
import { generate, LINKS, MIX, prng, TERMS } from '../../../bench/support/sparql-bsbm';
import type { PackageTerms } from '../../../db/models';
import { compilePackage } from '../../../ontology/compile';
import type { OntologyDefinition } from '../../../ontology/definition';
import { EvaluationPath, evaluateQuery, KeptParses, QueryDataset, SparqlResult } from '../../../ontology/sparql-engine';
import { storeSharingEntityIndex } from '../../../ontology/sparql-evaluator';
import { mapRecord } from '../../../ontology/term-records';

/** The parses the evaluator keeps plans by: this file's own, as a query thread has its own. */
const parses = new KeptParses();

// Weft's fast SPARQL path against Oxigraph on generated queries (fast-check, fixed seeds), over a
// small BSBM-like dataset and a hand-made one with mixed datatypes, language tags, blank nodes and
// properties only some subjects have. Answers compare as multisets (blank nodes up to a consistent
// relabelling; numbers by value, since Oxigraph canonicalises lexical forms), in order where the
// query's ORDER BY fixes it; graphs by isomorphism. The generator avoids the corners where SPARQL
// leaves the answer to the engine or where Oxigraph and the spec part ways (see `negatable`).
// Datasets of several stores are then checked against the merge of their triples in one store.

const XSD = 'http://www.w3.org/2001/XMLSchema#';
const EX = 'http://example.org/';
const LIMITS = { timeoutMs: 20_000, maxResults: 1_000_000 };
const SEED = Number(process.env.SPARQL_DIFF_SEED ?? 20260601);
const RUNS = Number(process.env.SPARQL_DIFF_RUNS ?? 300);
const { namedNode, literal, blankNode, quad } = DataFactory;
/** SPARQL_DIFF_TRACE=1 writes each generated query to stderr before it runs. */
const TRACE = Boolean(process.env.SPARQL_DIFF_TRACE);

// ---------------------------------------------------------------------------------------------
// What the generator knows of a dataset

/** How a property's values look: what can be filtered, computed and ordered on. */
type Kind = 'iri' | 'string' | 'lang' | 'integer' | 'numeric' | 'date' | 'boolean' | 'mixed';

interface Property {
  iri: string;
  kind: Kind;
  /** For IRI values: the class of the subjects they name. */
  target?: string;
}

interface ClassSchema {
  name: string;
  subjects: string[];
  properties: Property[];
}

interface Schema {
  classes: ClassSchema[];
  /** Constants per kind, in SPARQL syntax, drawn from the data. */
  constants: Record<Kind, string[]>;
}

// ---------------------------------------------------------------------------------------------
// Datasets

/** The hand-made dataset: each property keeps to one kind, except ex:tag, which holds every kind. */
function mixedDataset(): { quads: Quad[]; schema: Schema } {
  const random = prng(0x5a11ad);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const quads: Quad[] = [];
  const p = (name: string) => namedNode(`${EX}${name}`);
  const typed = (value: string, datatype: string) => literal(value, namedNode(`${XSD}${datatype}`));
  const subjects = Array.from({ length: 36 }, (_, i) => (i < 3 ? blankNode(`anon${i}`) : namedNode(`${EX}s${i}`)));
  const words = ['alpha', 'Beta', 'gamma', 'delta epsilon', 'Zeta', 'eta', 'théta', 'iota kappa', 'lambda', 'mu'];
  subjects.forEach((subject, i) => {
    quads.push(quad(subject, p('type'), p('Thing')));
    quads.push(quad(subject, p('name'), literal(`${pick(words)} ${i}`)));
    quads.push(quad(subject, p('label'), literal(pick(words), pick(['en', 'en-gb', 'fr', 'de']))));
    if (random() < 0.85) quads.push(quad(subject, p('age'), typed(String(Math.floor(random() * 90) - 5), 'integer')));
    // One numeric per subject, of one of four types (values never tie across types for one subject).
    const score = Math.floor(random() * 400) / 4 + 0.5;
    quads.push(quad(subject, p('score'), pick([typed(String(Math.round(score)), 'integer'), typed(String(score), 'decimal'), typed(`${score}E0`, 'double'), typed(String(-score), 'decimal')])));
    quads.push(quad(subject, p('born'), typed(`19${String(40 + Math.floor(random() * 60))}-0${1 + Math.floor(random() * 9)}-1${Math.floor(random() * 9)}`, 'date')));
    quads.push(quad(subject, p('active'), typed(random() < 0.5 ? 'true' : 'false', 'boolean')));
    for (let k = Math.floor(random() * 3); k > 0; k--) quads.push(quad(subject, p('knows'), subjects[3 + Math.floor(random() * 33)]));
    if (random() < 0.35) quads.push(quad(subject, p('nick'), literal(pick(words).toUpperCase())));
    const tags = [literal(pick(words)), typed(String(i % 7), 'integer'), p(`topic${i % 5}`), literal(pick(words), 'en'), typed(i % 2 ? 'true' : 'false', 'boolean'), blankNode(`tag${i}`)];
    for (let k = 0; k < 2; k++) quads.push(quad(subject, p('tag'), pick(tags)));
  });
  const iris = subjects.filter((s) => s.termType === 'NamedNode').map((s) => `<${s.value}>`);
  const property = (name: string, kind: Kind, target?: string): Property => ({ iri: `${EX}${name}`, kind, ...(target ? { target } : {}) });
  const schema: Schema = {
    classes: [
      {
        name: 'Thing',
        subjects: iris,
        properties: [property('name', 'string'), property('label', 'lang'), property('age', 'integer'), property('score', 'numeric'), property('born', 'date'), property('active', 'boolean'), property('knows', 'iri', 'Thing'), property('nick', 'string'), property('tag', 'mixed')],
      },
    ],
    constants: {
      iri: [...iris.slice(3, 9), `<${EX}topic1>`, `<${EX}nowhere>`],
      string: ['"alpha 4"', '"Zeta"', '"mu 35"', '"lambda"', '"théta 7"', '"ETA"'],
      lang: ['"alpha"@en', '"mu"@fr', '"Zeta"@en-gb', '"eta"@de'],
      integer: ['0', '18', '42', '-3', '70', '300'],
      numeric: ['0', '10.25', '42', '-20.5', '1.0E2', '55'],
      date: ['"1950-01-01"^^xsd:date', '"1970-06-15"^^xsd:date', '"1999-12-31"^^xsd:date'],
      boolean: ['true', 'false'],
      mixed: ['"alpha"', '3', `<${EX}topic2>`, '"mu"@en', 'true'],
    },
  };
  return { quads, schema };
}

const BSBM_BASE = 'https://bsbm.example/ontology#';

/** BSBM's package and records (bench/support/sparql-bsbm.ts), mapped as the endpoint maps them. */
async function bsbmDataset(triples: number): Promise<{ quads: Quad[]; schema: Schema; mix: Array<{ id: string; text: string }> }> {
  const data = generate(triples);
  const definition = { terms: TERMS, links: LINKS, shapes: [], constraints: [], imports: [] } as unknown as OntologyDefinition;
  const pkg = await compilePackage(definition, { baseIri: BSBM_BASE, packages: new Map(), documents: new Map() });
  const quads: Quad[] = new Parser({ format: 'application/n-quads' }).parse(pkg.nquads);
  const terms: PackageTerms = {
    classes: TERMS.filter((t) => t.kind === 'class').map((t) => t.id),
    properties: Object.fromEntries(TERMS.filter((t) => t.kind === 'property').map((t) => [t.id, { domain: t.domain!, datatype: t.datatype! }])),
    links: Object.fromEntries(LINKS.map((l) => [l.id, { from: l.from, to: l.to }])),
  };
  const subjects = new Map<string, string[]>();
  for (const spec of data.tables) {
    for (const record of spec.rows) {
      const mapped = mapRecord(record, spec.term, spec.mapping, terms, BSBM_BASE);
      if (!mapped) continue;
      quads.push(...mapped.quads);
      subjects.set(spec.term, [...(subjects.get(spec.term) ?? []), `<${mapped.iri}>`]);
    }
  }
  const kindOf = (datatype: string): Kind => (datatype === 'xsd:integer' ? 'integer' : datatype === 'xsd:decimal' ? 'numeric' : datatype === 'xsd:date' ? 'date' : 'string');
  const classes: ClassSchema[] = TERMS.filter((t) => t.kind === 'class').map((t) => ({
    name: t.id,
    subjects: (subjects.get(t.id) ?? []).slice(0, 12),
    properties: [
      ...TERMS.filter((p) => p.kind === 'property' && p.domain === t.id && p.datatype !== 'xsd:anyURI').map((p) => ({ iri: `${BSBM_BASE}${p.id}`, kind: kindOf(p.datatype!) })),
      ...LINKS.filter((l) => l.from === t.id).map((l) => ({ iri: `${BSBM_BASE}${l.id}`, kind: 'iri' as const, target: l.to })),
    ],
  }));
  const values = (predicate: string) => [...new Set(quads.filter((q) => q.predicate.value === `${BSBM_BASE}${predicate}`).map((q) => q.object))].slice(0, 40);
  const sparql = (term: RDF.Term) => (term.termType === 'NamedNode' ? `<${term.value}>` : (term as RDF.Literal).datatype.value === `${XSD}string` ? JSON.stringify(term.value) : `${JSON.stringify(term.value)}^^<${(term as RDF.Literal).datatype.value}>`);
  const schema: Schema = {
    classes: classes.filter((c) => c.subjects.length),
    constants: {
      iri: [...values('productFeature').slice(0, 4), ...values('productType').slice(0, 3), ...values('vendor').slice(0, 2)].map(sparql),
      string: [...values('vendorCountry').slice(0, 4), ...values('productLabel').slice(0, 2)].map(sparql).concat(['"ka"', '"Mon"']),
      lang: ['"x"@en'],
      integer: ['1', '3', '5', '500', '1200', '1999'],
      numeric: ['10', '99.5', '2500', '5000.25', '9999'],
      date: ['"2007-06-01"^^xsd:date', '"2008-03-15"^^xsd:date', '"2003-01-01"^^xsd:date'],
      boolean: ['true'],
      mixed: ['"ka"'],
    },
  };
  return { quads, schema, mix: MIX.map((q) => ({ id: q.id, text: q.text(BSBM_BASE, data.params) })) };
}

// ---------------------------------------------------------------------------------------------
// The query generator: a list of numbers (what fast-check generates and shrinks) drives choices

class Chooser {
  private at = 0;
  constructor(private readonly numbers: readonly number[]) {}
  private next(): number {
    return this.numbers[this.at++ % this.numbers.length];
  }
  int(lo: number, hi: number): number {
    return lo + (this.next() % (hi - lo + 1));
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(0, items.length - 1)];
  }
  chance(percent: number): boolean {
    return this.next() % 100 < percent;
  }
}

interface Variable {
  name: string;
  kind: Kind;
  /** Bound in every solution (not from an OPTIONAL). */
  certain: boolean;
  property?: Property;
}

interface GeneratedQuery {
  text: string;
  /** Variables whose values the ORDER BY fixes the order of (compared in order); none when unordered. */
  orderedBy: string[];
}

const NUMERIC_KINDS: ReadonlySet<Kind> = new Set(['integer', 'numeric']);
const ORDERABLE: ReadonlySet<Kind> = new Set(['integer', 'numeric', 'string', 'date', 'iri']);

/**
 * Kinds whose comparisons never fail, so their negations (!=, !, NOT IN) mean the same in both
 * engines. Comparing values of different types is a type error in SPARQL (Weft, like Comunica)
 * where Oxigraph answers false: inside a positive FILTER both drop the row, negated they differ.
 */
const negatable = (kind: Kind): boolean => kind !== 'mixed' && kind !== 'lang' && kind !== 'boolean';

function condition(variable: Variable, schema: Schema, c: Chooser): string {
  const v = variable.name;
  const constant = () => c.pick(schema.constants[variable.kind]);
  const positive: string[] = [];
  const negated: string[] = [];
  switch (variable.kind) {
    case 'integer':
    case 'numeric':
      positive.push(`${v} > ${constant()}`, `${v} <= ${constant()}`, `${v} = ${constant()}`, `${v} + 1 > ${constant()}`, `${v} * 2 < ${constant()}`, `${v} IN (${constant()}, ${constant()})`, `ABS(${v}) >= ${constant()}`, `ROUND(${v} / 3) < ${constant()}`, `isNumeric(${v})`, `${v} - 0.5 >= ${constant()} || ${v} < 0`);
      negated.push(`${v} != ${constant()}`, `${v} NOT IN (${constant()}, ${constant()})`, `!(${v} > ${constant()})`);
      break;
    case 'string':
      positive.push(`${v} = ${constant()}`, `${v} < ${constant()}`, `STRSTARTS(${v}, "${c.pick(['a', 'Z', 'k', 'mu', ''])}")`, `CONTAINS(LCASE(${v}), "${c.pick(['a', 'eta', ' ', 'ka'])}")`, `REGEX(${v}, "${c.pick(['^a', 'a$', 'ta', '[0-9]+$', '^.{5}'])}", "${c.pick(['', 'i'])}")`, `STRLEN(${v}) > ${c.int(3, 9)}`, `UCASE(${v}) = UCASE(${constant()})`, `STRENDS(${v}, "${c.pick(['a', '4', 's'])}")`, `SUBSTR(${v}, 2, 3) = "${c.pick(['lph', 'eta', 'amb'])}"`);
      negated.push(`${v} != ${constant()}`, `!CONTAINS(${v}, "a")`, `${v} NOT IN (${constant()})`);
      break;
    case 'lang':
      positive.push(`LANG(${v}) = "${c.pick(['en', 'fr', 'en-gb'])}"`, `LANGMATCHES(LANG(${v}), "${c.pick(['en', 'fr', '*'])}")`, `CONTAINS(${v}, "a")`, `STR(${v}) = "${c.pick(['alpha', 'mu', 'eta'])}"`, `${v} = ${constant()}`);
      break;
    case 'date':
      positive.push(`${v} > ${constant()}`, `${v} < ${constant()}`, `${v} = ${constant()}`);
      negated.push(`${v} != ${constant()}`, `!(${v} >= ${constant()})`);
      break;
    case 'boolean':
      positive.push(`${v} = ${constant()}`, v, `${v} && true`);
      break;
    case 'iri':
      positive.push(`${v} = ${constant()}`, `isIRI(${v})`, `STRSTARTS(STR(${v}), "${c.pick(['http://example.org/s1', 'https://bsbm.example/instances/products/', 'https://bsbm.example/instances/features/1'])}")`, `sameTerm(${v}, ${constant()})`);
      negated.push(`${v} != ${constant()}`, `!sameTerm(${v}, ${constant()})`);
      break;
    case 'mixed':
      positive.push(`isLiteral(${v})`, `isIRI(${v})`, `isBlank(${v})`, `isNumeric(${v})`, `${v} = ${constant()}`, `DATATYPE(${v}) = xsd:integer`, `LANG(${v}) = "en"`, `BOUND(${v})`);
      break;
  }
  if (!variable.certain) positive.push(`!BOUND(${v})`, `BOUND(${v})`, `COALESCE(${v}, "none") = "none"`);
  return c.pick(negatable(variable.kind) && variable.certain && c.chance(40) ? negated : positive);
}

function bindExpression(variable: Variable, c: Chooser): string | undefined {
  const v = variable.name;
  switch (variable.kind) {
    case 'integer':
    case 'numeric':
      return c.pick([`${v} + 1`, `${v} * 2`, `${v} - 0.5`, `${v} / 2`, `ABS(${v})`, `-${v}`, `IF(${v} > 10, "big", "small")`]);
    case 'string':
      return c.pick([`UCASE(${v})`, `STRLEN(${v})`, `CONCAT(${v}, "!")`, `SUBSTR(${v}, 2)`, `STRAFTER(${v}, "a")`, `LCASE(${v})`]);
    case 'lang':
      return c.pick([`LANG(${v})`, `STR(${v})`, `UCASE(${v})`, `CONCAT(${v}, ${v})`]);
    case 'iri':
      return `STR(${v})`;
    default:
      return undefined;
  }
}

function generateQuery(numbers: readonly number[], schema: Schema): GeneratedQuery {
  const c = new Chooser(numbers);
  const cls = c.pick(schema.classes);
  const patterns: string[] = [];
  const variables: Variable[] = [{ name: '?s', kind: 'iri', certain: true }];
  const count = Math.min(c.int(1, 3), cls.properties.length);
  const chosen = new Set<Property>();
  while (chosen.size < count) chosen.add(c.pick(cls.properties));
  [...chosen].forEach((property, i) => {
    patterns.push(`?s <${property.iri}> ?v${i} .`);
    variables.push({ name: `?v${i}`, kind: property.kind, certain: true, property });
  });
  const link = variables.find((v) => v.property?.target);
  if (link && c.chance(40)) {
    const target = schema.classes.find((candidate) => candidate.name === link.property!.target);
    if (target?.properties.length) {
      const property = c.pick(target.properties);
      patterns.push(`${link.name} <${property.iri}> ?w .`);
      variables.push({ name: '?w', kind: property.kind, certain: true, property });
    }
  }
  if (c.chance(15)) patterns.unshift(`VALUES ?s { ${[c.pick(cls.subjects), c.pick(cls.subjects), c.pick(cls.subjects)].join(' ')} }`);
  const required = [...variables];
  for (let i = c.int(0, 2); i > 0; i--) patterns.push(`FILTER (${condition(c.pick(required), schema, c)})`);
  if (c.chance(35)) {
    const property = c.pick(cls.properties);
    const optional: Variable = { name: '?o', kind: property.kind, certain: true, property };
    const inner = c.chance(40) ? ` FILTER (${condition(optional, schema, c)})` : '';
    patterns.push(`OPTIONAL { ?s <${property.iri}> ?o .${inner} }`);
    variables.push({ ...optional, certain: false });
    if (c.chance(40)) patterns.push(`FILTER (${condition({ ...optional, certain: false }, schema, c)})`);
  }
  if (c.chance(15)) {
    const kind = c.pick(cls.properties).kind;
    const same = cls.properties.filter((p) => p.kind === kind);
    patterns.push(`{ ?s <${c.pick(same).iri}> ?u } UNION { ?s <${c.pick(same).iri}> ?u }`);
    variables.push({ name: '?u', kind, certain: true });
  }
  if (c.chance(15)) {
    const property = c.pick(cls.properties);
    patterns.push(c.chance(50) ? `MINUS { ?s <${property.iri}> ${c.pick(schema.constants[property.kind])} }` : `MINUS { ?s <${property.iri}> ?m FILTER (${condition({ name: '?m', kind: property.kind, certain: true }, schema, c)}) }`);
  }
  if (c.chance(20)) {
    const property = c.pick(cls.properties);
    const inner = c.chance(50) ? ` FILTER (${condition({ name: '?z', kind: property.kind, certain: true }, schema, c)})` : '';
    patterns.push(`FILTER (${c.chance(50) ? 'NOT ' : ''}EXISTS { ?s <${property.iri}> ?z .${inner} })`);
  }
  // Variable scope: a nested group does not see the variables of what it joins with (§18.2.2),
  // and a variable an OPTIONAL may leave unbound must not narrow what comes after it.
  if (c.chance(30)) {
    const outer = c.pick(required).name;
    const property = c.pick(cls.properties);
    const other = c.pick(cls.properties);
    patterns.push(
      c.pick([
        `{ ?s <${property.iri}> ?x FILTER (${c.pick([`!BOUND(${outer})`, `BOUND(${outer})`, `COALESCE(${outer}, 1) = 1`, `?x = ${outer}`])}) }`,
        `{ BIND (COALESCE(${outer}, "unbound") AS ?c) }`,
        `OPTIONAL { ?s <${property.iri}> ?x OPTIONAL { ?s <${other.iri}> ?y FILTER (!BOUND(?x) || BOUND(?y)) } }`,
        `OPTIONAL { ?s <${property.iri}> ?x } OPTIONAL { ?s <${other.iri}> ?x }`,
        `OPTIONAL { ?s <${property.iri}> ?x } { ?s <${other.iri}> ?k OPTIONAL { ?s <${property.iri}> ?x } }`,
        `{ ?s <${property.iri}> ?x } UNION { ?s <${other.iri}> ?y } FILTER (!BOUND(?y) || BOUND(?x))`,
        `OPTIONAL { ?s <${property.iri}> ?x } MINUS { ?s <${other.iri}> ?x }`,
      ]),
    );
    variables.push({ name: '?x', kind: 'mixed', certain: false });
  }
  if (c.chance(25)) {
    const source = c.pick(required);
    const expression = bindExpression(source, c);
    if (expression) {
      patterns.push(`BIND (${expression} AS ?b)`);
      variables.push({ name: '?b', kind: 'mixed', certain: false });
    }
  }
  const where = `WHERE {\n  ${patterns.join('\n  ')}\n}`;
  const prefix = `PREFIX xsd: <${XSD}>\n`;

  const form = c.int(0, 99);
  if (form < 10) return { text: `${prefix}ASK ${where}`, orderedBy: [] };
  if (form < 25) {
    const object = c.pick(variables.filter((v) => v.certain)).name;
    const template = c.chance(30) ? `?s <${EX}has> [ <${EX}value> ${object} ]` : `?s <${EX}out> ${object}`;
    return { text: `${prefix}CONSTRUCT { ${template} } ${where}`, orderedBy: [] };
  }
  // Aggregates: over values every solution binds (Oxigraph fails an aggregate on an unbound value, Comunica and Weft skip it).
  if (form < 45) {
    const keys = variables.filter((v) => v.certain && (v.kind === 'iri' || v.kind === 'string'));
    const key = c.pick(keys);
    const numbers = variables.filter((v) => v.certain && NUMERIC_KINDS.has(v.kind));
    const aggregates = ['(COUNT(*) AS ?n)'];
    const any = c.pick(variables.filter((v) => v.certain));
    aggregates.push(c.pick([`(COUNT(DISTINCT ${any.name}) AS ?d)`, `(COUNT(${any.name}) AS ?d)`]));
    if (numbers.length) {
      const number = c.pick(numbers).name;
      aggregates.push(c.pick([`(SUM(${number}) AS ?a)`, `(AVG(${number}) AS ?a)`, `(MIN(${number}) AS ?a)`, `(MAX(${number}) AS ?a)`, `(SUM(DISTINCT ${number}) AS ?a)`, `(MAX(${number} * 2) AS ?a)`]));
    }
    const grouped = c.chance(80);
    const having = grouped && c.chance(30) ? ` HAVING (COUNT(*) > ${c.int(1, 3)})` : '';
    const ordered = grouped && c.chance(40);
    const slice = ordered && c.chance(60) ? ` LIMIT ${c.int(1, 8)}${c.chance(30) ? ` OFFSET ${c.int(1, 4)}` : ''}` : '';
    const text = grouped
      ? `${prefix}SELECT ${key.name} ${aggregates.join(' ')} ${where} GROUP BY ${key.name}${having}${ordered ? ` ORDER BY DESC(${key.name})` : ''}${slice}`
      : `${prefix}SELECT ${aggregates.join(' ')} ${where}`;
    return { text, orderedBy: ordered ? [key.name] : [] };
  }
  // Ordered with a slice: the order keys and the projection are one and distinct, so the slice is fixed.
  const orderable = variables.filter((v) => v.certain && ORDERABLE.has(v.kind) && v.name !== '?s');
  if (orderable.length && c.chance(35)) {
    const key = c.pick(orderable).name;
    const direction = c.chance(50) ? `DESC(${key})` : key;
    const slice = c.chance(70) ? ` LIMIT ${c.int(1, 10)}${c.chance(40) ? ` OFFSET ${c.int(1, 5)}` : ''}` : '';
    return { text: `${prefix}SELECT DISTINCT ${key} ?s ${where} ORDER BY ${direction} ?s${slice}`, orderedBy: [key, '?s'] };
  }
  if (c.chance(40)) return { text: `${prefix}SELECT * ${where}`, orderedBy: [] };
  const projected = variables.filter(() => c.chance(60)).map((v) => v.name);
  const selection = projected.length ? projected.join(' ') : '?s';
  return { text: `${prefix}SELECT ${c.chance(30) ? 'DISTINCT ' : ''}${selection} ${where}`, orderedBy: [] };
}

// ---------------------------------------------------------------------------------------------
// Comparing answers

type Row = Record<string, RDF.Term>;
const NUMERIC_DATATYPE = /#(integer|decimal|double|float|int|long|short|byte|nonNegativeInteger|positiveInteger|negativeInteger|nonPositiveInteger|unsignedLong|unsignedInt|unsignedShort|unsignedByte)$/;

/**
 * A term as text; numbers by value (12 significant digits); blank nodes all alike (matched by a
 * bijection after), or by label when both sides come from the same quads.
 */
function termKey(term: RDF.Term, labels = false): string {
  if (term.termType === 'BlankNode') return labels ? `_:${term.value}` : '_:*';
  if (term.termType !== 'Literal') return `<${term.value}>`;
  const literal = term as RDF.Literal;
  if (NUMERIC_DATATYPE.test(literal.datatype.value)) {
    const number = Number(literal.value);
    return `${literal.datatype.value}:${Number.isFinite(number) ? Number(number.toPrecision(12)) : literal.value}`;
  }
  return `"${literal.value}"${literal.language ? `@${literal.language.toLowerCase()}` : `^^${literal.datatype.value}`}`;
}

const rowKey = (row: Row, only?: string[], labels = false) =>
  Object.keys(row)
    .filter((name) => !only || only.includes(name))
    .sort()
    .map((name) => `${name}=${termKey(row[name], labels)}`)
    .join(' ');

/** Rows equal as multisets, under one bijection between the two sides' blank nodes (or their labels). */
function sameRows(actual: Row[], expected: Row[], labels: boolean): string | undefined {
  if (actual.length !== expected.length) return `${actual.length} rows, Oxigraph ${expected.length}`;
  const keysA = actual.map((row) => rowKey(row, undefined, labels));
  const keysE = expected.map((row) => rowKey(row, undefined, labels));
  const sortedA = [...keysA].sort();
  const sortedE = [...keysE].sort();
  const differs = sortedA.findIndex((key, i) => key !== sortedE[i]);
  if (differs >= 0) return `rows differ, e.g. Weft ${sortedA[differs]} | Oxigraph ${sortedE[differs]}`;
  if (!keysA.some((key) => key.includes('_:*'))) return undefined;
  const forward = new Map<string, string>();
  const backward = new Map<string, string>();
  const used = expected.map(() => false);
  const match = (i: number): boolean => {
    if (i === actual.length) return true;
    for (let j = 0; j < expected.length; j++) {
      if (used[j] || keysE[j] !== keysA[i]) continue;
      const added: string[] = [];
      const consistent = Object.entries(actual[i]).every(([name, term]) => {
        if (term.termType !== 'BlankNode') return true;
        const other = expected[j][name].value;
        const mapped = forward.get(term.value);
        if (mapped === undefined && !backward.has(other)) {
          forward.set(term.value, other);
          backward.set(other, term.value);
          added.push(term.value);
          return true;
        }
        return mapped === other;
      });
      if (consistent) {
        used[j] = true;
        if (match(i + 1)) return true;
        used[j] = false;
      }
      for (const label of added) {
        backward.delete(forward.get(label)!);
        forward.delete(label);
      }
    }
    return false;
  };
  return match(0) ? undefined : 'no consistent blank node relabelling';
}

/** Numbers written as Oxigraph and Weft may write them differently, so isomorphism compares values. */
function normalizedQuads(quads: readonly RDF.Quad[]): RDF.Quad[] {
  return quads.map((q) => {
    const object = q.object.termType === 'Literal' && NUMERIC_DATATYPE.test(q.object.datatype.value) ? literal(String(Number(Number(q.object.value).toPrecision(12))), q.object.datatype) : q.object;
    return quad(q.subject as never, q.predicate as never, object as never);
  });
}

function oxigraphRows(result: unknown): Row[] {
  return (result as Array<Map<string, RDF.Term>>).map((bindings) => Object.fromEntries([...bindings.entries()].map(([name, term]) => [name, term])));
}

/**
 * Why Weft's answer differs from the expected one (Oxigraph's form), or undefined when they agree.
 * `labels`: blank nodes compare by label (both answers come from the same quads).
 */
function difference(mine: SparqlResult, theirs: unknown, orderedBy: string[], labels = false): string | undefined {
  if (mine.kind === 'boolean') return mine.value === theirs ? undefined : `ASK answered ${mine.value}, Oxigraph ${String(theirs)}`;
  if (mine.kind === 'quads') return isomorphic(normalizedQuads(mine.quads), normalizedQuads(theirs as RDF.Quad[])) ? undefined : `graphs differ (${mine.quads.length} vs ${(theirs as RDF.Quad[]).length} triples)`;
  const expected = oxigraphRows(theirs);
  const unordered = sameRows(mine.rows, expected, labels);
  if (unordered) return unordered;
  const names = orderedBy.map((name) => name.slice(1));
  if (names.length && mine.rows.some((row, i) => rowKey(row, names) !== rowKey(expected[i], names))) return 'rows out of order';
  return undefined;
}

function oxigraphStore(quads: readonly RDF.Quad[]): oxigraph.Store {
  const store = new oxigraph.Store();
  store.load(new Writer({ format: 'N-Triples' }).quadsToString(quads as Quad[]), { format: 'application/n-triples' });
  return store;
}

/**
 * Weft's answer, evaluated twice as the query threads evaluate (the stores here never change, so
 * plans are kept): `again` is the answer of the plan the first evaluation kept.
 */
async function weft(source: Store | QueryDataset, text: string): Promise<{ result: SparqlResult; again: SparqlResult; path: EvaluationPath | undefined }> {
  let path: EvaluationPath | undefined;
  const result = await evaluateQuery(source, text, LIMITS, { onPath: (answered) => (path = answered), keepPlans: true, parses });
  const again = await evaluateQuery(source, text, LIMITS, { keepPlans: true, parses });
  return { result, again, path };
}

const numbers = fc.array(fc.nat({ max: 1_000_000 }), { minLength: 48, maxLength: 48 });

/** Runs generated queries over the store and Oxigraph; every one must take the fast path and agree. */
async function agreeWithOxigraph(store: Store, ox: oxigraph.Store, schema: Schema, seed: number): Promise<void> {
  await fc.assert(
    fc.asyncProperty(numbers, async (choices) => {
      const query = generateQuery(choices, schema);
      if (TRACE) process.stderr.write(`${query.text}\n---\n`);
      const { result, again, path } = await weft(store, query.text);
      assert.equal(path, 'fast', `the fast path did not take:\n${query.text}`);
      const expected = ox.query(query.text);
      const failure = difference(result, expected, query.orderedBy) ?? difference(again, expected, query.orderedBy)?.replace(/^/, 'evaluated again with its kept plan: ');
      if (TRACE) process.stderr.write(`=> ${result.kind === 'bindings' ? `${result.rows.length} rows` : result.kind === 'quads' ? `${result.quads.length} triples` : String(result.value)}\n`);
      assert.equal(failure, undefined, `${failure}\n${query.text}`);
    }),
    { seed, numRuns: RUNS },
  );
}

// ---------------------------------------------------------------------------------------------

describe('The fast SPARQL path against Oxigraph on generated queries', function () {
  this.timeout(120_000);

  it('agrees on a hand-made dataset of mixed datatypes, language tags, blank nodes and missing values', async () => {
    const { quads, schema } = mixedDataset();
    await agreeWithOxigraph(new Store(quads), oxigraphStore(quads), schema, SEED);
  });

  it('agrees on a small BSBM-like dataset, and on the BSBM query mix', async () => {
    const { quads, schema, mix } = await bsbmDataset(3000);
    const store = new Store(quads);
    const ox = oxigraphStore(quads);
    for (const query of mix) {
      const { result, again, path } = await weft(store, query.text);
      assert.equal(path, 'fast', query.id);
      const expected = ox.query(query.text);
      assert.equal(difference(result, expected, []), undefined, query.id);
      assert.equal(difference(again, expected, []), undefined, `${query.id}, evaluated again with its kept plan`);
    }
    await agreeWithOxigraph(store, ox, schema, SEED + 1);
  });

  it('fails on a wrong answer (the comparison is not vacuous)', () => {
    const row = { s: namedNode(`${EX}a`), n: literal('1', namedNode(`${XSD}integer`)) };
    const result: SparqlResult = { kind: 'bindings', variables: ['s', 'n'], rows: [row] };
    const other = new Map<string, RDF.Term>([['s', namedNode(`${EX}a`)], ['n', literal('2', namedNode(`${XSD}integer`))]]);
    assert.match(difference(result, [other], []) ?? '', /rows differ/);
    assert.match(difference(result, [], []) ?? '', /1 rows, Oxigraph 0/);
    assert.equal(difference(result, [new Map<string, RDF.Term>([['s', namedNode(`${EX}a`)], ['n', literal('1.0', namedNode(`${XSD}integer`))]])], []), undefined, 'numbers compare by value');
    const blanks: SparqlResult = { kind: 'bindings', variables: ['x', 'y'], rows: [{ x: blankNode('a'), y: blankNode('a') }] };
    assert.match(difference(blanks, [new Map<string, RDF.Term>([['x', blankNode('p')], ['y', blankNode('q')]])], []) ?? '', /relabelling/);
  });
});

// ---------------------------------------------------------------------------------------------
// Datasets of several stores: the default graph is the merge of theirs

/** Splits quads over three stores sharing one entity index, some triples held by two or three of them. */
function overlappingStores(quads: readonly Quad[], seed: number): QueryDataset {
  const random = prng(seed);
  const first = new Store();
  const stores = [first, storeSharingEntityIndex(first), storeSharingEntityIndex(first)];
  for (const q of quads) {
    const home = Math.floor(random() * 3);
    stores[home].addQuad(q);
    if (random() < 0.15) stores[(home + 1 + Math.floor(random() * 2)) % 3].addQuad(q);
    if (random() < 0.05) for (const store of stores) store.addQuad(q);
  }
  return { stores };
}

/** Splits quads by subject over two stores sharing an entity index: no triple, and no subject, is in both. */
function disjointStores(quads: readonly Quad[]): QueryDataset {
  const first = new Store();
  const second = storeSharingEntityIndex(first);
  for (const q of quads) (q.subject.value.length % 2 ? first : second).addQuad(q);
  return { stores: [first, second] };
}

describe('SPARQL over a dataset of several stores', function () {
  this.timeout(120_000);
  let quads: Quad[];
  let schema: Schema;
  let mix: Array<{ id: string; text: string }>;
  let merged: Store;

  before(async () => {
    ({ quads, schema, mix } = await bsbmDataset(3000));
    merged = new Store(quads);
  });

  const agree = async (dataset: QueryDataset, text: string, expectedPath?: EvaluationPath) => {
    const mine = await weft(dataset, text);
    const single = await weft(merged, text);
    if (expectedPath) assert.equal(mine.path, expectedPath, text);
    assert.equal(mine.path, single.path, `both answered by one path:\n${text}`);
    const expected = single.result.kind === 'bindings' ? single.result.rows.map((row) => new Map(Object.entries(row))) : single.result.kind === 'boolean' ? single.result.value : single.result.quads;
    assert.equal(difference(mine.result, expected, [], true), undefined, text);
    // The same text was just planned over other stores (the merge): each plan is kept for its own.
    assert.equal(difference(mine.again, expected, [], true), undefined, `evaluated again with its kept plan:\n${text}`);
  };

  it('counts a triple held by several stores once, on both paths', async () => {
    const dataset = overlappingStores(quads, 7);
    const held = dataset.stores.reduce((sum, store) => sum + store.size, 0);
    assert.ok(held > merged.size * 1.1, 'the stores overlap');
    const count = async (text: string, path: EvaluationPath) => {
      const { result, path: answered } = await weft(dataset, text);
      assert.equal(answered, path);
      return result.kind === 'bindings' ? Number(result.rows[0].n.value) : NaN;
    };
    assert.equal(await count('SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }', 'fast'), merged.size);
    // A negated property set is Comunica's: it reads the stores through the union source.
    assert.equal(await count('SELECT (COUNT(*) AS ?n) WHERE { ?s !<urn:weft:nothing> ?o }', 'comunica'), merged.size);
  });

  it('answers the BSBM mix and generated queries over overlapping stores as over their merge', async () => {
    const dataset = overlappingStores(quads, 11);
    for (const query of mix) await agree(dataset, query.text, 'fast');
    await fc.assert(
      fc.asyncProperty(numbers, async (choices) => agree(dataset, generateQuery(choices, schema).text, 'fast')),
      { seed: SEED + 2, numRuns: Math.ceil(RUNS / 3) },
    );
  });

  it('answers over stores that share no subject, and through Comunica, as over their merge', async () => {
    const dataset = disjointStores(quads);
    for (const query of mix.slice(0, 6)) await agree(dataset, query.text, 'fast');
    await agree(dataset, `SELECT ?s ?o WHERE { ?s !<${BSBM_BASE}productLabel> ?o }`, 'comunica');
    await agree(overlappingStores(quads, 3), `SELECT ?s ?o WHERE { ?s !(<${BSBM_BASE}price>|<${BSBM_BASE}productLabel>) ?o }`, 'comunica');
  });
});
