import type * as RDF from '@rdfjs/types';
import type { SparqlQuery } from 'sparqljs';

// What a query can reach: its triple patterns, each with the patterns whose matches may narrow
// it. Bound tables are read per query (services/ontology/sparql-reach-reads.ts): only the records
// whose triples can match one of these patterns, so the evaluator answers over a graph that holds
// every triple any solution uses, and nothing it would need is left unread.
//
// Narrowing is semi-join reduction, and only where it is sound. A pattern is a "required" pattern
// of its group when it is one of the group's own triples (its solutions are inner-joined with the
// rest of the group). A pattern may be narrowed on a variable by a required pattern of
//  - its own group (inner joins commute),
//  - an enclosing group, through plain groups and UNION branches (inner joins),
//  - the group's own patterns *before* an OPTIONAL or MINUS in it: those join after
//    `LeftJoin(A, B)` / `Minus(A, B)`, so narrowing B by a later pattern could turn an extended
//    solution into an unextended one that the later join then keeps; and not by enclosing groups'
//    patterns, which join only after the LeftJoin or Minus is evaluated,
//  - the group's own required patterns for FILTER (NOT) EXISTS (it tests the group's solutions,
//    which bind no variable of an enclosing group).
// A property path that may be of length zero, with no constant end, reaches every record.
// Subqueries are barriers both ways (their LIMIT, GROUP BY and DISTINCT see their own solutions
// only). A query this cannot analyse (DESCRIBE, GRAPH, a pattern type it does not know) reaches
// everything: undefined, and the caller reads whole graphs as before.

export type ReachNode =
  | { kind: 'var'; name: string }
  | { kind: 'iri'; value: string }
  | { kind: 'literal'; value: string; datatype: string; language: string }
  /** A position nothing is known of (a property path's inner node). */
  | { kind: 'free' };

/** `?v op constant` from a FILTER of the pattern's group, on the pattern's object. */
export interface NumericBound {
  op: '<' | '<=' | '>' | '>=' | '=';
  /** The constant as an exact decimal text (an xsd:integer or xsd:decimal literal). */
  value: string;
}

export interface ReachPattern {
  index: number;
  subject: ReachNode;
  /** undefined: any predicate (a variable, or a property path's negated set). */
  predicate?: string;
  object: ReachNode;
  /** Patterns whose matches' values may narrow this one (indexes into the patterns). */
  narrowedBy: number[];
  /** Numeric bounds every solution's object value meets (from the group's FILTERs). */
  objectBounds: NumericBound[];
  /** A required pattern of its group: it may narrow others. */
  required: boolean;
}

const XSD = 'http://www.w3.org/2001/XMLSchema#';
const NUMERIC_CONSTANT = new Set([`${XSD}integer`, `${XSD}decimal`]);

type Pattern = { type: string; [key: string]: unknown };
type Triple = { subject: RDF.Term; predicate: RDF.Term | PathExpression; object: RDF.Term };
type PathExpression = { type: 'path'; pathType: string; items: Array<RDF.Term | PathExpression> };
type Expression = { type?: string; operator?: string; args?: unknown[]; termType?: string; value?: string; [key: string]: unknown };

class Unanalysable extends Error {}

class Analysis {
  readonly patterns: ReachPattern[] = [];
  private blank = 0;

  node(term: RDF.Term, blanks: Map<string, string>): ReachNode {
    switch (term.termType) {
      case 'Variable':
        return { kind: 'var', name: term.value };
      case 'BlankNode': {
        // A blank node of a query is a variable scoped to its group's patterns.
        let name = blanks.get(term.value);
        if (!name) blanks.set(term.value, (name = ` blank ${this.blank++}`));
        return { kind: 'var', name };
      }
      case 'NamedNode':
        return { kind: 'iri', value: term.value };
      case 'Literal':
        return { kind: 'literal', value: term.value, datatype: term.datatype?.value ?? `${XSD}string`, language: term.language ?? '' };
      default:
        throw new Unanalysable(`term ${term.termType}`);
    }
  }

  add(subject: ReachNode, predicate: string | undefined, object: ReachNode, required: boolean, narrowedBy: number[]): number {
    const index = this.patterns.length;
    this.patterns.push({ index, subject, predicate, object, narrowedBy, objectBounds: [], required });
    return index;
  }

  /** The predicates of a path, each as a pattern whose ends are unknown (the first step's subject is the path's). */
  path(subject: ReachNode, path: PathExpression, object: ReachNode, narrowedBy: number[]): void {
    const iris: string[] = [];
    let anyPredicate = false;
    const walk = (item: RDF.Term | PathExpression) => {
      if ('type' in item && item.type === 'path') {
        if (item.pathType === '!') anyPredicate = true;
        else item.items.forEach(walk);
      } else if ((item as RDF.Term).termType === 'NamedNode') iris.push((item as RDF.Term).value);
      else throw new Unanalysable('path item');
    };
    walk(path);
    // A path that may have length zero with no constant end matches every node of the graph with
    // itself (§18.4, ALP), nodes of records no step's predicate names included: it reaches every record.
    const constant = (node: ReachNode) => node.kind === 'iri' || node.kind === 'literal';
    if (anyPredicate || (zeroLength(path) && !constant(subject) && !constant(object))) {
      this.add({ kind: 'free' }, undefined, { kind: 'free' }, false, []);
      return;
    }
    // A sequence that starts with a plain step keeps the path's subject on that step (a common
    // `?x :p/:q* <c>`); every other step is read whole.
    const first = path.pathType === '/' ? path.items[0] : undefined;
    const firstIri = first && (first as RDF.Term).termType === 'NamedNode' ? (first as RDF.Term).value : undefined;
    for (const [at, iri] of iris.entries()) {
      if (at === 0 && firstIri === iri) this.add(subject, iri, { kind: 'free' }, false, narrowedBy);
      else this.add({ kind: 'free' }, iri, { kind: 'free' }, false, []);
    }
    void object;
  }

  /**
   * A group's patterns. `inherited`: patterns of enclosing groups that may narrow every pattern here;
   * returns the group's required patterns.
   */
  group(patterns: Pattern[], inherited: number[]): void {
    const required: number[] = [];
    const blanks = new Map<string, string>();
    // Narrowing sets are filled in as the group is read: the group's own required patterns are
    // added to every one of its patterns' sets at the end (inner joins commute).
    const ownPatterns: number[] = [];
    const deferred: Array<() => void> = [];
    const filters: Expression[] = [];
    for (const pattern of patterns) {
      switch (pattern.type) {
        case 'bgp':
          for (const triple of pattern.triples as Triple[]) {
            const subject = this.node(triple.subject, blanks);
            const object = this.node(triple.object, blanks);
            const predicate = triple.predicate as RDF.Term | PathExpression;
            if ('type' in predicate && predicate.type === 'path') {
              const before = this.patterns.length;
              this.path(subject, predicate, object, [...inherited]);
              for (let i = before; i < this.patterns.length; i++) if (this.patterns[i].narrowedBy.length || this.patterns[i].subject.kind === 'var') ownPatterns.push(i);
            } else if ((predicate as RDF.Term).termType === 'Variable') {
              const index = this.add(subject, undefined, object, true, [...inherited]);
              required.push(index);
              ownPatterns.push(index);
            } else if ((predicate as RDF.Term).termType === 'NamedNode') {
              const index = this.add(subject, (predicate as RDF.Term).value, object, true, [...inherited]);
              required.push(index);
              ownPatterns.push(index);
            } else throw new Unanalysable('predicate');
          }
          break;
        case 'group':
        case 'union': {
          // Inner joins with this group: narrowed by all of its required patterns, whenever they come.
          const children = pattern.type === 'union' ? (pattern.patterns as Pattern[]) : [pattern];
          deferred.push(() => {
            for (const child of children) this.group(child.type === 'group' ? (child.patterns as Pattern[]) : [child], [...inherited, ...required]);
          });
          break;
        }
        case 'optional':
        case 'minus': {
          // Joined after LeftJoin/Minus: only the patterns read so far may narrow it, and only this
          // group's own: LeftJoin(D, E) inside a group joined with A is evaluated before that join,
          // so narrowing E by A (on a variable D leaves unbound) would leave a D solution unextended
          // (or not removed) that E's dropped match would have extended and the join with A dropped.
          const before = [...required];
          deferred.push(() => this.group(pattern.patterns as Pattern[], before));
          break;
        }
        case 'filter':
          filters.push(pattern.expression as Expression);
          break;
        case 'bind': {
          // EXISTS in a BIND tests the solutions of the patterns before it (Extend is evaluated where
          // it stands): narrowed by those only. Its patterns were not read at all before.
          const before = [...required];
          for (const inner of existsGroups(pattern.expression)) deferred.push(() => this.group(inner, before));
          break;
        }
        case 'values':
          break;
        case 'query':
          // A subquery: its own analysis, narrowed by nothing outside and narrowing nothing outside.
          deferred.push(() => this.query(pattern as unknown as SparqlQuery, []));
          break;
        default:
          throw new Unanalysable(`pattern ${pattern.type}`);
      }
    }
    for (const index of ownPatterns) {
      const narrowedBy = this.patterns[index].narrowedBy;
      for (const other of required) if (other !== index && !narrowedBy.includes(other)) narrowedBy.push(other);
    }
    for (const filter of filters) {
      for (const bound of numericBounds(filter)) {
        for (const index of required) {
          const pattern = this.patterns[index];
          if (pattern.object.kind === 'var' && pattern.object.name === bound.variable) pattern.objectBounds.push(bound.bound);
        }
      }
      // EXISTS inside a filter tests the group's solutions: narrowed by every required pattern of
      // this group, and not by enclosing groups' (their variables are not bound in what it tests).
      for (const inner of existsGroups(filter)) deferred.push(() => this.group(inner, [...required]));
    }
    for (const run of deferred) run();
  }

  query(query: SparqlQuery, inherited: number[]): void {
    if (query.type !== 'query') throw new Unanalysable('update');
    if (query.queryType === 'DESCRIBE') throw new Unanalysable('DESCRIBE');
    if ((query as { from?: unknown }).from) throw new Unanalysable('FROM');
    this.group((query.where ?? []) as unknown as Pattern[], inherited);
    // Expressions of the projection and of HAVING or ORDER BY may hold EXISTS: evaluated per solution.
    const elsewhere: unknown[] = [];
    if (query.queryType === 'SELECT') elsewhere.push(query.variables, query.having, query.order, query.group);
    for (const inner of elsewhere.flatMap(existsGroups)) this.group(inner, []);
  }
}

/** Whether a path matches a zero-length path (a node with itself). */
function zeroLength(item: RDF.Term | PathExpression): boolean {
  if (!('type' in item) || item.type !== 'path') return false;
  switch (item.pathType) {
    case '*':
    case '?':
      return true;
    case '/':
      return item.items.every(zeroLength);
    case '|':
      return item.items.some(zeroLength);
    case '^':
    case '+':
      return zeroLength(item.items[0]);
    default:
      return false;
  }
}

/** Groups of EXISTS / NOT EXISTS anywhere inside an expression (or list of them). */
function existsGroups(node: unknown): Pattern[][] {
  if (Array.isArray(node)) return node.flatMap(existsGroups);
  if (!node || typeof node !== 'object') return [];
  const expression = node as Expression;
  if (expression.type === 'operation' && (expression.operator === 'exists' || expression.operator === 'notexists')) {
    const group = (expression.args ?? [])[0] as Pattern;
    return [group.type === 'group' ? (group.patterns as Pattern[]) : [group]];
  }
  if (expression.termType) return [];
  return Object.values(expression).flatMap(existsGroups);
}

/** Digits a numeric bound may have: PostgreSQL's numeric refuses more than 16,383 after the point. */
const MAX_BOUND_DIGITS = 1_000;

/** `?v op n` conjuncts of a filter, with n an integer or decimal literal. */
function numericBounds(expression: Expression): Array<{ variable: string; bound: NumericBound }> {
  if (expression.type !== 'operation') return [];
  const args = (expression.args ?? []) as Expression[];
  if (expression.operator === '&&') return args.flatMap(numericBounds);
  const flipped: Record<string, NumericBound['op']> = { '<': '>', '<=': '>=', '>': '<', '>=': '<=', '=': '=' };
  const op = expression.operator as NumericBound['op'];
  if (!(op in flipped) || args.length !== 2) return [];
  const [left, right] = args;
  // A bound narrows the records read (a parameter of numeric); one longer than PostgreSQL's numeric takes is left out, and the read is wider.
  const constant = (term: Expression) => term.termType === 'Literal' && NUMERIC_CONSTANT.has((term as unknown as RDF.Literal).datatype.value) && String(term.value).length <= MAX_BOUND_DIGITS && /^[+-]?(\d+(\.\d*)?|\.\d+)$/.test(String(term.value));
  if (left.termType === 'Variable' && constant(right)) return [{ variable: String(left.value), bound: { op, value: String(right.value) } }];
  if (right.termType === 'Variable' && constant(left)) return [{ variable: String(right.value), bound: { op: flipped[op], value: String(left.value) } }];
  return [];
}

/** The query's triple patterns with what may narrow each, or undefined when it cannot be analysed. */
export function reachOf(query: SparqlQuery): ReachPattern[] | undefined {
  const analysis = new Analysis();
  try {
    analysis.query(query, []);
  } catch (error) {
    if (error instanceof Unanalysable) return undefined;
    throw error;
  }
  return analysis.patterns;
}

/** The variables of a pattern's subject and object. */
export function patternVariables(pattern: ReachPattern): string[] {
  const names: string[] = [];
  if (pattern.subject.kind === 'var') names.push(pattern.subject.name);
  if (pattern.object.kind === 'var' && !names.includes(pattern.object.name)) names.push(pattern.object.name);
  return names;
}

/** Solutions past which a query is not answered from its first ones (its tables are reached as usual). */
const MAX_FIRST_SOLUTIONS = 10_000;

/**
 * How many solutions of the query's one basic graph pattern fix a valid answer, when its answer is
 * any such number of them: ASK (OFFSET plus one), or a SELECT of plain variables or a CONSTRUCT with a LIMIT
 * (OFFSET plus LIMIT), with no ORDER BY, GROUP BY, aggregate, HAVING, DISTINCT, REDUCED or VALUES, over
 * one BGP whose triples share one subject (a single triple pattern, or a star) with no property
 * path. A BGP is monotone: its solutions over part of the graph are solutions over the whole, and
 * an unordered query's slice may be any OFFSET + LIMIT of them (§15: the order of solutions is
 * undefined), so records read in any order may stop once that many solutions are found among
 * them. Undefined otherwise: what joins, OPTIONAL, MINUS, NOT EXISTS, FILTER or ordering would
 * give over part of the data is not known to be a valid answer, or not without evaluating it.
 */
export function firstSolutionsOf(query: SparqlQuery): number | undefined {
  if (query.type !== 'query' || (query as { from?: unknown }).from || query.values) return undefined;
  const modifiers = query as { group?: unknown[]; having?: unknown[]; order?: unknown[]; distinct?: boolean; reduced?: boolean; limit?: number; offset?: number };
  // REDUCED may drop duplicates among the solutions found, leaving fewer rows than the whole answer's slice.
  if (modifiers.group?.length || modifiers.having?.length || modifiers.order?.length || modifiers.distinct || modifiers.reduced) return undefined;
  if (modifiers.limit === 0) return undefined;
  let needed: number;
  // ASK is true when a solution is left after its OFFSET.
  if (query.queryType === 'ASK') needed = (modifiers.offset ?? 0) + 1;
  else if (query.queryType === 'SELECT' || query.queryType === 'CONSTRUCT') {
    if (query.queryType === 'SELECT' && !query.variables.every((variable) => 'termType' in variable && (variable.termType === 'Variable' || variable.termType === 'Wildcard'))) return undefined;
    if (modifiers.limit === undefined) return undefined;
    needed = (modifiers.offset ?? 0) + modifiers.limit;
  } else return undefined;
  if (needed > MAX_FIRST_SOLUTIONS) return undefined;
  const where = query.where ?? [];
  if (where.length !== 1 || where[0].type !== 'bgp') return undefined;
  const triples = where[0].triples;
  if (!triples.length) return undefined;
  const subject = triples[0].subject;
  const sameSubject = (term: RDF.Term) => term.termType === subject.termType && term.value === subject.value;
  const plain = (predicate: unknown) => (predicate as RDF.Term).termType === 'NamedNode' || (predicate as RDF.Term).termType === 'Variable';
  if (!triples.every((triple) => sameSubject(triple.subject as RDF.Term) && plain(triple.predicate))) return undefined;
  return needed;
}
