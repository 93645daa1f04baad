import type * as Sparql from 'sparqljs';
import * as casts from './casts';
import * as comparison from './comparison';
import * as literals from './literal-values';
import * as numerics from './numeric';
import type { Numeric } from './numeric';
import { translateRegex } from './regex';
import type { Row } from './solution';
import * as strings from './string-functions';
import type { TermTable } from './term-table';
import * as terms from './terms';
import type { Term } from './terms';
import { UnsupportedQuery } from './unsupported';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { cast, CAST_FUNCTIONS } = casts;
const { compareForOperator, termsEqual } = comparison;
const { LiteralKind, literalValue } = literals;
const { arithmetic, lexicalForm, negate, numericTypeIri, rounding } = numerics;
const { concat, contains, encodeForUri, langMatches, lcase, regexTest, strafter, strbefore, strends, strlen, strstarts, substr, ucase } = strings;
const { booleanTerm, langLiteral, namedNode, sameTerm, simpleLiteral, typedLiteral, XSD_STRING } = terms;

// Compiles sparqljs expressions into closures over a row. A closure returns the value's term, or
// undefined for an error (an unbound variable included); the operators below apply SPARQL's
// error rules (§17.2): || and && recover from an error when the other side decides, IF and
// COALESCE choose around errors, and a FILTER keeps a row only when its condition is true.

export type ValueOf = (row: Row) => Term | undefined;
export type Condition = (row: Row) => boolean;

/** What an expression needs from the query it is part of. */
export interface ExpressionScope {
  readonly terms: TermTable;
  /** The row slot of a variable. */
  slot(variable: string): number;
  /** EXISTS: whether the pattern has a solution with the row's bindings substituted in. */
  exists(pattern: Sparql.Pattern): Condition;
  /** The slot holding an aggregate's value, where aggregates are allowed (projection, HAVING, ORDER BY). */
  aggregate?(expression: Sparql.AggregateExpression): number;
}

/** Operators and built-in calls (sparqljs names) the compiler implements. */
export const SUPPORTED_OPERATORS: ReadonlySet<string> = new Set([
  '||', '&&', '!', '=', '!=', '<', '>', '<=', '>=', 'in', 'notin', '+', '-', '*', '/', 'UMINUS', 'UPLUS',
  'bound', 'if', 'coalesce', 'sameterm', 'isiri', 'isuri', 'isblank', 'isliteral', 'isnumeric',
  'str', 'lang', 'datatype', 'langmatches', 'regex', 'contains', 'strstarts', 'strends', 'strbefore', 'strafter',
  'lcase', 'ucase', 'strlen', 'concat', 'substr', 'encode_for_uri', 'abs', 'ceil', 'floor', 'round', 'exists', 'notexists',
]);

/** The effective boolean value (§17.2.2); undefined for a type error. */
export function effectiveBoolean(term: Term | undefined): boolean | undefined {
  if (term === undefined || term.termType !== 'Literal') return undefined;
  const value = literalValue(term);
  switch (value.kind) {
    case LiteralKind.Boolean:
      return value.boolean;
    case LiteralKind.Numeric: {
      const number = value.numeric!.number;
      return number !== 0 && !Number.isNaN(number);
    }
    case LiteralKind.String:
      return term.value !== '';
    case LiteralKind.Invalid:
      // A boolean or number with an invalid lexical form is false.
      return false;
    default:
      return undefined;
  }
}

/** A query constant as an evaluator term. */
export function termOfConstant(term: Sparql.IriTerm | Sparql.LiteralTerm | Sparql.BlankTerm): Term {
  if (term.termType === 'NamedNode') return namedNode(term.value);
  if (term.termType === 'BlankNode') return { termType: 'BlankNode', value: term.value };
  if (term.language) return langLiteral(term.value, term.language);
  return term.datatype && term.datatype.value !== XSD_STRING ? typedLiteral(term.value, term.datatype.value) : simpleLiteral(term.value);
}

const numericOf = (term: Term | undefined): Numeric | undefined => (term !== undefined && term.termType === 'Literal' ? literalValue(term).numeric : undefined);
const numericTerm = (value: Numeric | undefined): Term | undefined => value && typedLiteral(lexicalForm(value), numericTypeIri(value.type));

const isExpressionNode = (node: unknown): node is { type: string } => typeof node === 'object' && node !== null && 'type' in node;

export function compileExpression(expression: Sparql.Expression, scope: ExpressionScope): ValueOf {
  if (Array.isArray(expression)) throw new UnsupportedQuery('an expression list outside IN');
  if (!isExpressionNode(expression)) {
    const term = expression as Sparql.Term;
    if (term.termType === 'Variable') {
      const slot = scope.slot(term.value);
      const terms = scope.terms;
      return (row) => {
        const id = row[slot];
        return id === 0 ? undefined : terms.term(id);
      };
    }
    if (term.termType === 'Quad') throw new UnsupportedQuery('a quoted triple');
    const constant = termOfConstant(term);
    return () => constant;
  }
  switch (expression.type) {
    case 'operation':
      return compileOperation(expression as Sparql.OperationExpression, scope);
    case 'functionCall':
      return compileFunctionCall(expression as Sparql.FunctionCallExpression, scope);
    case 'aggregate': {
      if (!scope.aggregate) throw new UnsupportedQuery('an aggregate outside a projection, HAVING or ORDER BY');
      const slot = scope.aggregate(expression as Sparql.AggregateExpression);
      const terms = scope.terms;
      return (row) => (row[slot] === 0 ? undefined : terms.term(row[slot]));
    }
    default:
      throw new UnsupportedQuery(`expression type ${(expression as { type: string }).type}`);
  }
}

/** A FILTER condition: true only when the effective boolean value is true (an error filters the row out). */
export function compileCondition(expression: Sparql.Expression, scope: ExpressionScope): Condition {
  if (isExpressionNode(expression) && expression.type === 'operation') {
    const { operator, args } = expression as Sparql.OperationExpression;
    // An error on one side of && makes it false or an error; of || true or an error: a FILTER
    // reads both as "not true", so the sides can be short-circuited as plain booleans.
    if (operator === '&&') {
      const [left, right] = args.map((arg) => compileCondition(arg as Sparql.Expression, scope));
      return (row) => left(row) && right(row);
    }
    if (operator === '||') {
      const [left, right] = args.map((arg) => compileCondition(arg as Sparql.Expression, scope));
      return (row) => left(row) || right(row);
    }
    if (operator === 'exists' || operator === 'notexists') {
      const found = scope.exists(args[0] as Sparql.Pattern);
      return operator === 'exists' ? found : (row) => !found(row);
    }
  }
  const value = compileExpression(expression, scope);
  return (row) => effectiveBoolean(value(row)) === true;
}

function compileOperation(expression: Sparql.OperationExpression, scope: ExpressionScope): ValueOf {
  const { operator } = expression;
  if (!SUPPORTED_OPERATORS.has(operator)) throw new UnsupportedQuery(`the function ${operator.toUpperCase()}`);
  if (operator === 'exists' || operator === 'notexists') {
    const found = scope.exists(expression.args[0] as Sparql.Pattern);
    return operator === 'exists' ? (row) => booleanTerm(found(row)) : (row) => booleanTerm(!found(row));
  }
  if (operator === 'bound') {
    const variable = expression.args[0] as Sparql.VariableTerm;
    if (variable.termType !== 'Variable') throw new UnsupportedQuery('BOUND of a non-variable');
    const slot = scope.slot(variable.value);
    return (row) => booleanTerm(row[slot] !== 0);
  }
  if (operator === 'in' || operator === 'notin') return compileIn(expression, scope);
  if (operator === 'regex') return compileRegex(expression, scope);
  const args = expression.args.map((arg) => compileExpression(arg as Sparql.Expression, scope));
  const [a, b, c] = args;
  switch (operator) {
    case '||':
      return (row) => {
        const left = effectiveBoolean(a(row));
        if (left === true) return booleanTerm(true);
        const right = effectiveBoolean(b(row));
        if (right === true) return booleanTerm(true);
        return left === false && right === false ? booleanTerm(false) : undefined;
      };
    case '&&':
      return (row) => {
        const left = effectiveBoolean(a(row));
        if (left === false) return booleanTerm(false);
        const right = effectiveBoolean(b(row));
        if (right === false) return booleanTerm(false);
        return left === true && right === true ? booleanTerm(true) : undefined;
      };
    case '!':
      return (row) => {
        const value = effectiveBoolean(a(row));
        return value === undefined ? undefined : booleanTerm(!value);
      };
    case '=':
    case '!=': {
      const negated = operator === '!=';
      return (row) => {
        const x = a(row);
        const y = x && b(row);
        if (!y) return undefined;
        const equal = termsEqual(x!, y);
        return equal === undefined ? undefined : booleanTerm(equal !== negated);
      };
    }
    case '<':
    case '>':
    case '<=':
    case '>=': {
      const test = operator === '<' ? (n: number) => n < 0 : operator === '>' ? (n: number) => n > 0 : operator === '<=' ? (n: number) => n <= 0 : (n: number) => n >= 0;
      return (row) => {
        const x = a(row);
        const y = x && b(row);
        if (!y) return undefined;
        const order = compareForOperator(x!, y);
        return order === undefined ? undefined : booleanTerm(test(order));
      };
    }
    case '+':
    case '-':
    case '*':
    case '/':
      return (row) => {
        const x = numericOf(a(row));
        const y = x && numericOf(b(row));
        return y && numericTerm(arithmetic(operator, x!, y));
      };
    case 'UMINUS':
      return (row) => {
        const x = numericOf(a(row));
        return x && numericTerm(negate(x));
      };
    case 'UPLUS':
      return (row) => {
        const term = a(row);
        return numericOf(term) ? term : undefined;
      };
    case 'if':
      return (row) => {
        const test = effectiveBoolean(a(row));
        return test === undefined ? undefined : test ? b(row) : c(row);
      };
    case 'coalesce':
      return (row) => {
        for (const arg of args) {
          const value = arg(row);
          if (value !== undefined) return value;
        }
        return undefined;
      };
    case 'sameterm':
      return (row) => {
        const x = a(row);
        const y = x && b(row);
        if (!y) return undefined;
        return booleanTerm(sameTerm(x!, y));
      };
    case 'isiri':
    case 'isuri':
      return typeTest(a, (term) => term.termType === 'NamedNode');
    case 'isblank':
      return typeTest(a, (term) => term.termType === 'BlankNode');
    case 'isliteral':
      return typeTest(a, (term) => term.termType === 'Literal');
    case 'isnumeric':
      return typeTest(a, (term) => numericOf(term) !== undefined);
    case 'str':
      return unary(a, (term) => (term.termType === 'Literal' ? (term.datatype === XSD_STRING ? term : simpleLiteral(term.value)) : term.termType === 'NamedNode' ? simpleLiteral(term.value) : undefined));
    case 'lang':
      return unary(a, (term) => (term.termType === 'Literal' ? simpleLiteral(term.language) : undefined));
    case 'datatype':
      return unary(a, (term) => (term.termType === 'Literal' ? namedNode(term.datatype) : undefined));
    case 'langmatches':
      return binary(a, b, langMatches);
    case 'contains':
      return binary(a, b, contains);
    case 'strstarts':
      return binary(a, b, strstarts);
    case 'strends':
      return binary(a, b, strends);
    case 'strbefore':
      return binary(a, b, strbefore);
    case 'strafter':
      return binary(a, b, strafter);
    case 'lcase':
      return unary(a, lcase);
    case 'ucase':
      return unary(a, ucase);
    case 'strlen':
      return unary(a, strlen);
    case 'encode_for_uri':
      return unary(a, encodeForUri);
    case 'abs':
    case 'ceil':
    case 'floor':
    case 'round':
      return unary(a, (term) => {
        const x = numericOf(term);
        return x && numericTerm(rounding(operator, x));
      });
    case 'concat':
      return (row) => {
        const parts: Term[] = [];
        for (const arg of args) {
          const value = arg(row);
          if (value === undefined) return undefined;
          parts.push(value);
        }
        return concat(parts);
      };
    case 'substr':
      return (row) => {
        const source = a(row);
        const start = source && b(row);
        if (!start) return undefined;
        if (!c) return substr(source!, start);
        const length = c(row);
        return length && substr(source!, start, length);
      };
    default:
      throw new UnsupportedQuery(`the function ${operator.toUpperCase()}`);
  }
}

const unary = (a: ValueOf, apply: (term: Term) => Term | undefined): ValueOf => (row) => {
  const x = a(row);
  return x && apply(x);
};

const binary = (a: ValueOf, b: ValueOf, apply: (x: Term, y: Term) => Term | undefined): ValueOf => (row) => {
  const x = a(row);
  const y = x && b(row);
  return y && apply(x!, y);
};

const typeTest = (a: ValueOf, test: (term: Term) => boolean): ValueOf => (row) => {
  const x = a(row);
  return x && booleanTerm(test(x));
};

/** IN (§17.4.1.9): true when some member equals; an error when none does and some comparison failed. */
function compileIn(expression: Sparql.OperationExpression, scope: ExpressionScope): ValueOf {
  const needle = compileExpression(expression.args[0] as Sparql.Expression, scope);
  const members = (expression.args[1] as Sparql.Expression[]).map((member) => compileExpression(member, scope));
  const negated = expression.operator === 'notin';
  return (row) => {
    const value = needle(row);
    if (value === undefined) return undefined;
    let failed = false;
    for (const member of members) {
      const candidate = member(row);
      const equal = candidate === undefined ? undefined : termsEqual(value, candidate);
      if (equal === true) return booleanTerm(!negated);
      if (equal === undefined) failed = true;
    }
    return failed ? undefined : booleanTerm(negated);
  };
}

const constantString = (node: unknown): string | undefined => {
  const term = node as Sparql.Term;
  return term && term.termType === 'Literal' && !term.language && term.datatype.value === XSD_STRING ? term.value : undefined;
};

/** REGEX with a constant pattern and flags, translated once (regex.ts); other forms go to Comunica. */
function compileRegex(expression: Sparql.OperationExpression, scope: ExpressionScope): ValueOf {
  const [text, patternNode, flagsNode] = expression.args;
  const pattern = constantString(patternNode);
  const flags = flagsNode === undefined ? '' : constantString(flagsNode);
  if (pattern === undefined || flags === undefined) throw new UnsupportedQuery('REGEX with a computed pattern or flags');
  const regex = translateRegex(pattern, flags);
  if (!regex) throw new UnsupportedQuery(`the regular expression ${JSON.stringify(pattern)}`);
  const value = compileExpression(text as Sparql.Expression, scope);
  return (row) => {
    const term = value(row);
    return term && regexTest(term, regex);
  };
}

/** sparqljs gives a call's function as an IRI term (older versions: a string). */
export const functionName = (call: Sparql.FunctionCallExpression): string => (typeof call.function === 'string' ? call.function : (call.function as Sparql.IriTerm).value);

function compileFunctionCall(expression: Sparql.FunctionCallExpression, scope: ExpressionScope): ValueOf {
  const name = functionName(expression);
  if (!CAST_FUNCTIONS.has(name) || expression.args.length !== 1 || expression.distinct) throw new UnsupportedQuery(`the function <${name}>`);
  const argument = compileExpression(expression.args[0], scope);
  return (row) => {
    const term = argument(row);
    return term && cast(name, term);
  };
}
