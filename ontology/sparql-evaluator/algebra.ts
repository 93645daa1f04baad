import type * as Sparql from 'sparqljs';
import { UnsupportedQuery } from './unsupported';

// The SPARQL algebra of a WHERE clause (SPARQL 1.1 §18.2.2), translated from sparqljs's parse
// tree: a group's FILTERs apply to the whole group, OPTIONAL is a LeftJoin whose right group's
// filters become its condition, BIND extends what precedes it, everything else joins. Variables
// are named as in the query; blank nodes of patterns become variables no query can name.

export type PatternTerm = { variable: string } | { constant: Sparql.IriTerm | Sparql.LiteralTerm };

export interface TriplePattern {
  subject: PatternTerm;
  predicate: PatternTerm;
  object: PatternTerm;
}

export type AlgebraNode =
  | { type: 'unit' }
  | { type: 'bgp'; triples: TriplePattern[] }
  | { type: 'join'; inputs: AlgebraNode[] }
  | { type: 'leftjoin'; left: AlgebraNode; right: AlgebraNode; condition: Sparql.Expression[] }
  | { type: 'filter'; input: AlgebraNode; conditions: Sparql.Expression[] }
  | { type: 'union'; branches: AlgebraNode[] }
  | { type: 'minus'; left: AlgebraNode; right: AlgebraNode }
  | { type: 'extend'; input: AlgebraNode; variable: string; expression: Sparql.Expression }
  | { type: 'values'; variables: string[]; rows: Array<Array<Sparql.IriTerm | Sparql.LiteralTerm | undefined>> }
  | { type: 'subquery'; query: Sparql.SelectQuery }
  /** subject (path)* object, + or ?: the ends connected by the closure of `path` (paths.ts). */
  | { type: 'path'; subject: PatternTerm; object: PatternTerm; closure: '*' | '+' | '?'; path: Sparql.IriTerm | Sparql.PropertyPath };

/** Variables named by a blank node of a pattern: '_:' cannot start a SPARQL variable name. */
export const blankVariable = (label: string): string => `_:${label}`;
export const isBlankVariable = (name: string): boolean => name.startsWith('_:');

function patternTerm(term: Sparql.Term): PatternTerm {
  switch (term.termType) {
    case 'Variable':
      return { variable: term.value };
    case 'BlankNode':
      return { variable: blankVariable(term.value) };
    case 'NamedNode':
    case 'Literal':
      return { constant: term };
    default:
      throw new UnsupportedQuery('a quoted triple');
  }
}

/** Fresh variables for the inner nodes of path sequences: unique in the process, hidden like blank nodes. */
let pathVariables = 0;

/**
 * A property path as algebra (§18.2.2.4): an IRI is a triple pattern, ^ swaps the ends, / joins
 * through a fresh variable, | is a union; *, + and ? are path nodes.
 */
function translatePath(subject: PatternTerm, path: Sparql.IriTerm | Sparql.PropertyPath, object: PatternTerm): AlgebraNode {
  if (!('type' in path)) return { type: 'bgp', triples: [{ subject, predicate: { constant: path }, object }] };
  const items = path.items as Array<Sparql.IriTerm | Sparql.PropertyPath>;
  switch (path.pathType) {
    case '^':
      return translatePath(object, items[0], subject);
    case '/': {
      let node: AlgebraNode = { type: 'unit' };
      let from = subject;
      items.forEach((item, index) => {
        const to: PatternTerm = index === items.length - 1 ? object : { variable: blankVariable(`path${pathVariables++}`) };
        node = join(node, translatePath(from, item, to));
        from = to;
      });
      return node;
    }
    case '|':
      return { type: 'union', branches: items.map((item) => translatePath(subject, item, object)) };
    case '*':
    case '+':
    case '?':
      return { type: 'path', subject, object, closure: path.pathType, path: items[0] };
    default:
      throw new UnsupportedQuery('a negated property set');
  }
}

/** A block of triples: plain triples make one BGP; path triples join it. */
function translateBgp(triples: Sparql.Triple[]): AlgebraNode {
  let node: AlgebraNode = { type: 'unit' };
  for (const triple of triples) {
    const subject = patternTerm(triple.subject as Sparql.Term);
    const object = patternTerm(triple.object);
    const predicate = triple.predicate;
    node = join(node, 'type' in predicate ? translatePath(subject, predicate, object) : { type: 'bgp', triples: [{ subject, predicate: patternTerm(predicate as Sparql.Term), object }] });
  }
  return node;
}

/** Joins two nodes, keeping a join flat and its BGPs one BGP (a join of triple patterns is one BGP). */
function join(left: AlgebraNode, right: AlgebraNode): AlgebraNode {
  if (left.type === 'unit') return right;
  if (right.type === 'unit') return left;
  const inputs = [...(left.type === 'join' ? left.inputs : [left]), ...(right.type === 'join' ? right.inputs : [right])];
  const triples = inputs.flatMap((input) => (input.type === 'bgp' ? input.triples : []));
  const others = inputs.filter((input) => input.type !== 'bgp');
  const merged = triples.length ? [{ type: 'bgp', triples } as AlgebraNode, ...others] : others;
  return merged.length === 1 ? merged[0] : { type: 'join', inputs: merged };
}

/**
 * Joins a BGP that follows an OPTIONAL, MINUS or BIND into what precedes it when that cannot
 * change the answer (its variables meet the later part only in variables the earlier part always
 * binds), so the BGP's triples can be ordered with the earlier ones.
 */
function joinHoisted(group: AlgebraNode, bgp: AlgebraNode & { type: 'bgp' }): AlgebraNode {
  const own = variablesOf(bgp);
  const meetsOnlyIn = (later: ReadonlySet<string>, earlier: AlgebraNode) => {
    const certain = certainlyBound(earlier);
    return [...own].every((name) => !later.has(name) || certain.has(name));
  };
  switch (group.type) {
    case 'leftjoin': {
      const later = new Set([...variablesOf(group.right), ...group.condition.flatMap((c) => [...expressionVariables(c)])]);
      return meetsOnlyIn(later, group.left) ? { ...group, left: joinHoisted(group.left, bgp) } : join(group, bgp);
    }
    case 'minus':
      return meetsOnlyIn(variablesOf(group.right), group.left) ? { ...group, left: joinHoisted(group.left, bgp) } : join(group, bgp);
    case 'extend':
      return !own.has(group.variable) && meetsOnlyIn(expressionVariables(group.expression), group.input) ? { ...group, input: joinHoisted(group.input, bgp) } : join(group, bgp);
    default:
      return join(group, bgp);
  }
}

export function valuesNode(pattern: { values: Sparql.ValuePatternRow[] }): AlgebraNode & { type: 'values' } {
  const variables = [...new Set(pattern.values.flatMap((row) => Object.keys(row)))];
  return {
    type: 'values',
    variables: variables.map((name) => name.replace(/^\?/, '')),
    rows: pattern.values.map((row) =>
      variables.map((name) => {
        const term = row[name];
        if (term && term.termType !== 'NamedNode' && term.termType !== 'Literal') throw new UnsupportedQuery('a blank node in VALUES');
        return term as Sparql.IriTerm | Sparql.LiteralTerm | undefined;
      }),
    ),
  };
}

/** One element of a group, other than FILTER, OPTIONAL, MINUS and BIND. */
function translateElement(pattern: Sparql.Pattern): AlgebraNode {
  switch (pattern.type) {
    case 'bgp':
      return translateBgp(pattern.triples);
    case 'group':
      return translateGroup(pattern.patterns);
    case 'union':
      return { type: 'union', branches: pattern.patterns.map(translatePattern) };
    case 'values':
      return valuesNode(pattern);
    case 'query':
      return { type: 'subquery', query: pattern as Sparql.SelectQuery };
    default:
      throw new UnsupportedQuery(`${String((pattern as { type: string }).type).toUpperCase()} patterns`);
  }
}

/**
 * Translations, per parsed group: kept parses (sparql-engine.ts) bring the same objects back, and
 * the variable sets below are kept per node, so a repeated query reuses both.
 */
const translated = new WeakMap<Sparql.Pattern[], AlgebraNode>();

/** A group graph pattern (§18.2.2.6). Nodes are never changed once made. */
export function translateGroup(patterns: Sparql.Pattern[]): AlgebraNode {
  let node = translated.get(patterns);
  if (!node) {
    node = translateGroupOnce(patterns);
    translated.set(patterns, node);
  }
  return node;
}

const translatedPatterns = new WeakMap<Sparql.Pattern, AlgebraNode>();

/** One pattern as a group of its own (a UNION branch, an EXISTS pattern). */
export function translatePattern(pattern: Sparql.Pattern): AlgebraNode {
  if (pattern.type === 'group') return translateGroup(pattern.patterns);
  let node = translatedPatterns.get(pattern);
  if (!node) {
    node = translateGroupOnce([pattern]);
    translatedPatterns.set(pattern, node);
  }
  return node;
}

function translateGroupOnce(patterns: Sparql.Pattern[]): AlgebraNode {
  const filters: Sparql.Expression[] = [];
  let group: AlgebraNode = { type: 'unit' };
  for (const pattern of patterns) {
    switch (pattern.type) {
      case 'filter':
        filters.push(pattern.expression);
        break;
      case 'optional': {
        const right = translateGroup(pattern.patterns);
        group = right.type === 'filter' ? { type: 'leftjoin', left: group, right: right.input, condition: right.conditions } : { type: 'leftjoin', left: group, right, condition: [] };
        break;
      }
      case 'minus':
        group = { type: 'minus', left: group, right: translateGroup(pattern.patterns) };
        break;
      case 'bind':
        if (maybeBound(group).has(pattern.variable.value)) throw new UnsupportedQuery('BIND to a variable already in scope');
        group = { type: 'extend', input: group, variable: pattern.variable.value, expression: pattern.expression };
        break;
      default: {
        const element = translateElement(pattern);
        group = element.type === 'bgp' ? joinHoisted(group, element) : join(group, element);
      }
    }
  }
  return filters.length ? { type: 'filter', input: group, conditions: filters } : group;
}

// ---------------------------------------------------------------------------------------------
// Variables: all a node mentions, those every solution binds, those some solution may bind

const mentioned = new WeakMap<object, ReadonlySet<string>>();
const certain = new WeakMap<object, ReadonlySet<string>>();
const possible = new WeakMap<object, ReadonlySet<string>>();

function memo(cache: WeakMap<object, ReadonlySet<string>>, key: object, compute: () => ReadonlySet<string>): ReadonlySet<string> {
  let value = cache.get(key);
  if (!value) {
    value = compute();
    cache.set(key, value);
  }
  return value;
}

const termVariables = (term: PatternTerm): string[] => ('variable' in term ? [term.variable] : []);
const union = (sets: Iterable<ReadonlySet<string>>): Set<string> => {
  const result = new Set<string>();
  for (const set of sets) for (const name of set) result.add(name);
  return result;
};

/** Variables of an expression, those of EXISTS patterns included (they are substituted from the row). */
export function expressionVariables(expression: Sparql.Expression | Sparql.Pattern): ReadonlySet<string> {
  return memo(mentioned, expression as object, () => {
    const names = new Set<string>();
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) return node.forEach(walk);
      if (!node || typeof node !== 'object') return;
      const term = node as { termType?: string; value?: string };
      if (term.termType === 'Variable') names.add(term.value!);
      else if (term.termType === 'BlankNode') names.add(blankVariable(term.value!));
      else if (!term.termType) Object.values(node).forEach(walk);
    };
    walk(expression);
    return names;
  });
}

/** Every variable a node mentions, in patterns and expressions (a subquery: its projection). */
export function variablesOf(node: AlgebraNode): ReadonlySet<string> {
  return memo(mentioned, node, () => {
    switch (node.type) {
      case 'unit':
        return new Set();
      case 'bgp':
        return new Set(node.triples.flatMap((t) => [...termVariables(t.subject), ...termVariables(t.predicate), ...termVariables(t.object)]));
      case 'join':
        return union(node.inputs.map(variablesOf));
      case 'leftjoin':
        return union([variablesOf(node.left), variablesOf(node.right), ...node.condition.map(expressionVariables)]);
      case 'filter':
        return union([variablesOf(node.input), ...node.conditions.map(expressionVariables)]);
      case 'union':
        return union(node.branches.map(variablesOf));
      case 'minus':
        return union([variablesOf(node.left), variablesOf(node.right)]);
      case 'extend':
        return union([variablesOf(node.input), expressionVariables(node.expression), new Set([node.variable])]);
      case 'values':
        return new Set(node.variables);
      case 'subquery':
        return projectedVariables(node.query);
      case 'path':
        return new Set([...termVariables(node.subject), ...termVariables(node.object)]);
    }
  });
}

// The sets below are kept per node and shared by every query that reuses the node: never change one.

/** Variables every solution of the node binds. */
export function certainlyBound(node: AlgebraNode): ReadonlySet<string> {
  return memo(certain, node, () => {
    switch (node.type) {
      case 'unit':
        return new Set();
      case 'bgp':
      case 'path':
        return variablesOf(node);
      case 'join':
        return union(node.inputs.map(certainlyBound));
      case 'leftjoin':
      case 'minus':
        return certainlyBound(node.left);
      case 'filter':
      case 'extend':
        return certainlyBound(node.input);
      case 'union': {
        const [first, ...rest] = node.branches.map(certainlyBound);
        return new Set([...first].filter((name) => rest.every((set) => set.has(name))));
      }
      case 'values':
        return new Set(node.variables.filter((_, i) => node.rows.every((row) => row[i] !== undefined)));
      case 'subquery': {
        const query = node.query;
        if (query.group || hasAggregate(query.variables) || !query.where) return new Set();
        const inner = certainlyBound(translateGroup(query.where));
        return new Set([...projectedVariables(query)].filter((name) => inner.has(name) && !isProjectedExpression(query, name)));
      }
    }
  });
}

/** Variables some solution of the node may bind. */
export function maybeBound(node: AlgebraNode): ReadonlySet<string> {
  return memo(possible, node, () => {
    switch (node.type) {
      case 'unit':
        return new Set();
      case 'bgp':
      case 'values':
      case 'subquery':
      case 'path':
        return variablesOf(node);
      case 'join':
        return union(node.inputs.map(maybeBound));
      case 'leftjoin':
        return union([maybeBound(node.left), maybeBound(node.right)]);
      case 'minus':
        return maybeBound(node.left);
      case 'filter':
        return maybeBound(node.input);
      case 'extend':
        return union([maybeBound(node.input), new Set([node.variable])]);
      case 'union':
        return union(node.branches.map(maybeBound));
    }
  });
}

/** Whether an expression (or list of them) holds an aggregate. */
export function hasAggregate(node: unknown): boolean {
  if (Array.isArray(node)) return node.some(hasAggregate);
  if (!node || typeof node !== 'object') return false;
  if ((node as { type?: string }).type === 'aggregate') return true;
  // A subquery in an EXISTS has aggregates of its own.
  if ((node as { type?: string }).type === 'query') return false;
  return Object.values(node).some(hasAggregate);
}

function isProjectedExpression(query: Sparql.SelectQuery, name: string): boolean {
  return query.variables.some((v) => 'expression' in v && v.variable.value === name);
}

/** The variables a SELECT projects: its list, or for SELECT * every variable its pattern may bind (in order of appearance). */
export function projectedVariables(query: Sparql.SelectQuery): ReadonlySet<string> {
  return memo(mentioned, query.variables, () => {
    const wildcard = query.variables.length === 1 && (query.variables[0] as { termType?: string }).termType === 'Wildcard';
    if (!wildcard) return new Set((query.variables as Sparql.Variable[]).map((v) => ('expression' in v ? v.variable.value : v.value)));
    const inScope = query.where ? maybeBound(translateGroup(query.where)) : new Set<string>();
    const values = query.values ? variablesOf(valuesNode({ values: query.values })) : new Set<string>();
    return new Set([...inScope, ...values].filter((name) => !isBlankVariable(name)));
  });
}
