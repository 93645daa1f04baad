import type * as Sparql from 'sparqljs';
import { SUPPORTED_AGGREGATES } from './aggregates';
import { CAST_FUNCTIONS } from './casts';
import { functionName, SUPPORTED_OPERATORS } from './expressions';
import { translateRegex } from './regex';
import { XSD_STRING } from './terms';

// Decides, before anything is evaluated, whether the fast path evaluates a query: every pattern,
// expression and function of it must be one it implements. Anything else (property paths, GRAPH,
// SERVICE, DESCRIBE, FROM, functions not implemented here) is Comunica's. Planning checks again
// as it goes (UnsupportedQuery), so a form this walk misses still goes to Comunica.

/** Answers per parsed query (kept parses come back as the same objects). */
const checked = new WeakMap<Sparql.Query, string | null>();

/** Why the fast path does not take the query, or undefined when it does. */
export function unsupportedFeature(query: Sparql.Query): string | undefined {
  let found = checked.get(query);
  if (found === undefined) {
    found = firstUnsupported(query) ?? null;
    checked.set(query, found);
  }
  return found ?? undefined;
}

function firstUnsupported(query: Sparql.Query): string | undefined {
  if (query.queryType === 'DESCRIBE') return 'DESCRIBE';
  if (query.from && (query.from.default.length || query.from.named.length)) return 'FROM';
  if (query.queryType === 'CONSTRUCT' && query.template?.some((triple) => !plainTriple(triple))) return 'a quoted triple in the template';
  return inQuery(query);
}

function plainTriple(triple: Sparql.Triple): boolean {
  return [triple.subject, triple.predicate, triple.object].every((term) => 'termType' in term && term.termType !== 'Quad');
}

function hasNegatedPropertySet(path: Sparql.PropertyPath | Sparql.IriTerm): boolean {
  if (!('type' in path)) return false;
  return path.pathType === '!' || path.items.some((item) => hasNegatedPropertySet(item as Sparql.PropertyPath | Sparql.IriTerm));
}

function inQuery(query: Sparql.Query): string | undefined {
  if (query.queryType === 'SELECT') {
    for (const variable of query.variables) if ('expression' in variable) {
      const found = inExpression(variable.expression, true);
      if (found) return found;
    }
    for (const grouping of query.group ?? []) {
      const found = inExpression(grouping.expression, false);
      if (found) return found;
    }
    for (const expression of query.having ?? []) {
      const found = inExpression(expression, true);
      if (found) return found;
    }
  }
  for (const ordering of (query as Sparql.SelectQuery).order ?? []) {
    const found = inExpression(ordering.expression, query.queryType === 'SELECT');
    if (found) return found;
  }
  return inPatterns(query.where ?? []);
}

function inPatterns(patterns: Sparql.Pattern[]): string | undefined {
  for (const pattern of patterns) {
    const found = inPattern(pattern);
    if (found) return found;
  }
  return undefined;
}

function inPattern(pattern: Sparql.Pattern): string | undefined {
  switch (pattern.type) {
    case 'bgp':
      for (const triple of pattern.triples) {
        if ('type' in triple.predicate) {
          if (hasNegatedPropertySet(triple.predicate)) return 'a negated property set';
        } else if (!plainTriple(triple)) return 'a quoted triple';
      }
      return undefined;
    case 'filter':
      return inExpression(pattern.expression, false);
    case 'bind':
      return inExpression(pattern.expression, false);
    case 'optional':
    case 'union':
    case 'group':
    case 'minus':
      return inPatterns(pattern.patterns);
    case 'values':
      return pattern.values.some((row) => Object.values(row).some((term) => term && term.termType === 'BlankNode')) ? 'a blank node in VALUES' : undefined;
    case 'query':
      return firstUnsupported(pattern as Sparql.SelectQuery);
    default:
      return `${String((pattern as { type: string }).type).toUpperCase()} patterns`;
  }
}

 /**
 * EXISTS substitutes the row's values into its pattern (§17.4.1.4). Into MINUS, VALUES, BIND and
 * subqueries that substitution means something other than a join with the row, so Comunica takes
 * those.
 */
function inExistsPattern(pattern: Sparql.Pattern): string | undefined {
  const walk = (node: Sparql.Pattern): string | undefined => {
    if (node.type === 'minus' || node.type === 'values' || node.type === 'bind' || node.type === 'query') return `${node.type.toUpperCase()} inside EXISTS`;
    if ('patterns' in node) for (const inner of node.patterns) {
      const found = walk(inner);
      if (found) return found;
    }
    return undefined;
  };
  return walk(pattern) ?? inPattern(pattern);
}

const isStringConstant = (node: unknown): boolean => {
  const term = node as Sparql.Term;
  return Boolean(term && term.termType === 'Literal' && !term.language && term.datatype.value === XSD_STRING);
};

function inExpression(expression: Sparql.Expression, aggregatesAllowed: boolean): string | undefined {
  if (Array.isArray(expression)) {
    for (const member of expression) {
      const found = inExpression(member, aggregatesAllowed);
      if (found) return found;
    }
    return undefined;
  }
  if (!('type' in expression)) return (expression as Sparql.Term).termType === 'Quad' ? 'a quoted triple' : undefined;
  switch (expression.type) {
    case 'operation': {
      const { operator, args } = expression as Sparql.OperationExpression;
      if (!SUPPORTED_OPERATORS.has(operator)) return `the function ${operator.toUpperCase()}`;
      if (operator === 'exists' || operator === 'notexists') return inExistsPattern(args[0] as Sparql.Pattern);
      if (operator === 'regex') {
        if (!isStringConstant(args[1]) || (args[2] !== undefined && !isStringConstant(args[2]))) return 'REGEX with a computed pattern or flags';
        if (!translateRegex((args[1] as Sparql.LiteralTerm).value, args[2] ? (args[2] as Sparql.LiteralTerm).value : '')) return 'a regular expression JavaScript reads differently';
      }
      for (const arg of args) {
        const found = inExpression(arg as Sparql.Expression, aggregatesAllowed);
        if (found) return found;
      }
      return undefined;
    }
    case 'functionCall': {
      const call = expression as Sparql.FunctionCallExpression;
      const name = functionName(call);
      if (!CAST_FUNCTIONS.has(name) || call.args.length !== 1 || call.distinct) return `the function <${name}>`;
      return inExpression(call.args[0], aggregatesAllowed);
    }
    case 'aggregate': {
      const aggregate = expression as Sparql.AggregateExpression;
      if (!aggregatesAllowed) return 'an aggregate outside a projection, HAVING or ORDER BY';
      const name = aggregate.aggregation.toLowerCase();
      if (!SUPPORTED_AGGREGATES.has(name)) return `the aggregate ${name.toUpperCase()}`;
      const argument = aggregate.expression as { termType?: string };
      if (argument.termType === 'Wildcard') return name === 'count' ? undefined : `${name.toUpperCase()}(*)`;
      return inExpression(aggregate.expression as Sparql.Expression, false);
    }
    default:
      return `expression type ${(expression as { type: string }).type}`;
  }
}
