import jsonata from 'jsonata';
import Decimal from 'decimal.js';
import { FieldProblem, InputError } from '../core/errors';
import type { Condition } from '../plugins/capability';
import { matchesAll } from '../plugins/condition-match';

export type Row = Record<string, unknown>;

export type CastType = 'string' | 'number' | 'integer' | 'decimal' | 'boolean' | 'timestamp' | 'date' | 'json';

export type TransformNode =
  | { id: string; type: 'select'; fields?: string[]; rename?: Record<string, string> }
  | { id: string; type: 'filter'; where: Condition[] }
  | { id: string; type: 'compute'; fields: Array<{ name: string; expression: string }> }
  | { id: string; type: 'cast'; fields: Record<string, CastType>; onError?: 'fail' | 'null' }
  | { id: string; type: 'dedupe'; key: string[] };

export type CompiledTransform =
  | { kind: 'map'; apply(records: Row[]): Promise<Row[]> }
  | { kind: 'dedupe'; keyOf(record: Row): string };

/** A record a transform node cannot process; details name the node, the field and (a preview of) the value. */
export class TransformError extends InputError {
  constructor(message: string, where: { nodeId: string; field?: string; value?: unknown }, problems: FieldProblem[] = []) {
    const details: Record<string, unknown> = { nodeId: where.nodeId };
    if (where.field !== undefined) details.field = where.field;
    if ('value' in where) details.value = preview(where.value);
    super('transform_failed', message, problems, details);
  }
}

/** JSON text of a value, cut to 200 characters so a huge record never lands in an error or a log. */
function preview(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

/** JSON Pointer segment escaping (RFC 6901), for field names used as path segments. */
const pointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

// Guardrails JSONata 2.x enforces itself: 1 s per evaluation, 500 nested calls, 100k-item sequences.
const JSONATA_LIMITS = { timeout: 1000, stack: 500, sequence: 100_000 };

function parse(expression: string): jsonata.Expression {
  return jsonata(expression, JSONATA_LIMITS);
}

/** JSONata throws plain objects ({ code, position, message }), not Errors. */
function describeJsonataError(error: unknown): string {
  const { message, position, code } = (error ?? {}) as { message?: unknown; position?: unknown; code?: unknown };
  const text = typeof message === 'string' && message ? message : String(error);
  const where = typeof position === 'number' ? ` at position ${position}` : '';
  return typeof code === 'string' ? `${text} (${code}${where})` : `${text}${where ? ` (${where.trim()})` : ''}`;
}

/** Static problems of one node (paths relative to it), or [] when it can be compiled. Never throws. */
export function transformProblems(node: TransformNode): FieldProblem[] {
  const problems: FieldProblem[] = [];
  try {
    if (node.type === 'compute') {
      const seen = new Set<string>();
      node.fields.forEach((field, index) => {
        if (seen.has(field.name)) problems.push({ path: `/fields/${index}/name`, message: `repeats the computed field "${field.name}"` });
        seen.add(field.name);
        try {
          parse(field.expression);
        } catch (error) {
          problems.push({ path: `/fields/${index}/expression`, message: `is not a valid JSONata expression: ${describeJsonataError(error)}` });
        }
      });
    } else if (node.type === 'select' && node.rename) {
      const sources = new Map<string, string>();
      for (const [from, to] of Object.entries(node.rename)) {
        const other = sources.get(to);
        if (other !== undefined) {
          problems.push({ path: `/rename/${pointer(from)}`, message: `renames to "${to}", as "${other}" already does` });
        } else if (node.fields?.includes(to) && !Object.hasOwn(node.rename, to) && from !== to) {
          // The kept field would be overwritten by the renamed one.
          problems.push({ path: `/rename/${pointer(from)}`, message: `renames to "${to}", which is also a selected field` });
        }
        sources.set(to, from);
      }
    }
  } catch (error) {
    problems.push({ path: '/', message: `cannot be checked: ${String(error)}` });
  }
  return problems;
}

export function compileTransform(node: TransformNode): CompiledTransform {
  const problems = transformProblems(node);
  if (problems.length) {
    throw new TransformError(`Node "${node.id}" is invalid: ${problems.map((p) => `${p.path} ${p.message}`).join('; ')}`, { nodeId: node.id }, problems);
  }
  switch (node.type) {
    case 'select':
      return mapEach((record) => select(record, node.fields, node.rename ?? {}));
    case 'filter':
      return { kind: 'map', apply: async (records) => records.filter((record) => matchesAll(record, node.where)).map((record) => ({ ...record })) };
    case 'compute':
      return compileCompute(node);
    case 'cast':
      return mapEach((record) => castRecord(node, record));
    case 'dedupe':
      return {
        kind: 'dedupe',
        keyOf(record) {
          const values = node.key.map((field) => {
            const value = record[field];
            if (value === undefined || value === null) {
              throw new TransformError(`Node "${node.id}" could not deduplicate: a record has no value for key field "${field}".`, { nodeId: node.id, field, value: value ?? null });
            }
            return value;
          });
          // JSON keeps types apart: "1" and 1 are different keys.
          return JSON.stringify(values);
        },
      };
  }
}

function mapEach(transform: (record: Row) => Row): CompiledTransform {
  return { kind: 'map', apply: async (records) => records.map(transform) };
}

/** Keeps `fields` in their order (absent ones are left out), then renames; a renamed value wins over a kept field of the same name. */
function select(record: Row, fields: string[] | undefined, rename: Record<string, string>): Row {
  const names = fields ? fields.filter((field) => Object.hasOwn(record, field)) : Object.keys(record);
  const renamedTo = (name: string) => (Object.hasOwn(rename, name) ? rename[name] : undefined);
  const targets = new Set(names.map(renamedTo).filter((name) => name !== undefined));
  const out: Row = {};
  for (const name of names) {
    const to = renamedTo(name);
    if (to !== undefined) put(out, to, record[name]);
    else if (!targets.has(name)) put(out, name, record[name]);
  }
  return out;
}

/** Defines an own property: a field named "__proto__" must stay data, never replace the prototype. */
function put(row: Row, name: string, value: unknown): void {
  Object.defineProperty(row, name, { value, writable: true, enumerable: true, configurable: true });
}

function compileCompute(node: Extract<TransformNode, { type: 'compute' }>): CompiledTransform {
  const compiled = node.fields.map((field) => ({ name: field.name, expression: parse(field.expression) }));
  return {
    kind: 'map',
    async apply(records) {
      const out: Row[] = [];
      for (const record of records) {
        const next: Row = { ...record };
        for (const { name, expression } of compiled) {
          let result: unknown;
          try {
            // No bindings: expressions see the record and JSONata's built-ins only.
            result = await expression.evaluate(next);
          } catch (error) {
            throw new TransformError(`Node "${node.id}" could not compute field "${name}": ${describeJsonataError(error)}.`, { nodeId: node.id, field: name });
          }
          put(next, name, result === undefined ? null : toJson(result, () => new TransformError(`Node "${node.id}" could not compute field "${name}": the expression produced a function, not a JSON value.`, { nodeId: node.id, field: name })));
        }
        out.push(next);
      }
      return out;
    },
  };
}

/** A JSON copy drops JSONata's sequence markers and never aliases the input record's objects; functions (JSONata lambdas are objects) are refused. */
function toJson(value: unknown, refusal: () => Error): unknown {
  try {
    return JSON.parse(JSON.stringify(value, (_key, item: unknown) => {
      if (typeof item === 'function' || (item !== null && typeof item === 'object' && ('_jsonata_lambda' in item || '_jsonata_function' in item))) throw refusal();
      return item;
    }));
  } catch {
    throw refusal();
  }
}

function castRecord(node: Extract<TransformNode, { type: 'cast' }>, record: Row): Row {
  const out: Row = { ...record };
  for (const [field, type] of Object.entries(node.fields)) {
    if (!Object.hasOwn(record, field)) continue;
    const value = record[field];
    if (value === undefined || value === null) {
      put(out, field, null);
      continue;
    }
    const cast = castValue(value, type);
    if (cast !== FAILED) put(out, field, cast);
    else if (node.onError === 'null') put(out, field, null);
    else {
      const shown = preview(value);
      throw new TransformError(`Node "${node.id}" could not cast field "${field}" value ${shown} to ${type}.`, { nodeId: node.id, field, value });
    }
  }
  return out;
}

const FAILED = Symbol('cast failed');

// Plain decimal notation only: Number() would also take hex, binary and "Infinity".
const NUMERIC = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;

function toNumber(value: unknown): number | typeof FAILED {
  if (typeof value === 'number') return Number.isFinite(value) ? value : FAILED;
  if (typeof value !== 'string' || !NUMERIC.test(value.trim())) return FAILED;
  const number = Number(value.trim());
  return Number.isFinite(number) ? number : FAILED;
}

function castValue(value: unknown, type: CastType): unknown {
  switch (type) {
    case 'string':
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
    case 'number':
      return toNumber(value);
    case 'integer': {
      const number = toNumber(value);
      // Beyond 2^53 the integer would silently change; refuse instead.
      return number !== FAILED && Number.isSafeInteger(number) ? number : FAILED;
    }
    case 'decimal': {
      const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : typeof value === 'string' ? value.trim() : '';
      if (!NUMERIC.test(text)) return FAILED;
      const decimal = new Decimal(text);
      // toFixed writes every digit: bound the exponent so "1e999999999" cannot allocate a huge string.
      return Math.abs(decimal.e) <= 1000 ? decimal.toFixed() : FAILED;
    }
    case 'boolean': {
      const text = typeof value === 'string' ? value.trim().toLowerCase() : value;
      if (text === true || text === 'true' || text === 1 || text === '1') return true;
      if (text === false || text === 'false' || text === 0 || text === '0') return false;
      return FAILED;
    }
    case 'timestamp': {
      const time = toTime(value);
      return time === FAILED ? FAILED : new Date(time).toISOString();
    }
    case 'date': {
      const time = toTime(value);
      return time === FAILED ? FAILED : new Date(time).toISOString().slice(0, 10);
    }
    case 'json':
      if (typeof value !== 'string') return value;
      try {
        return JSON.parse(value);
      } catch {
        return FAILED;
      }
  }
}

const ISO = /^(\d{4})-(\d{2})-(\d{2})(?:[T ]([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;
const RFC = /^(?:[a-z]{3},\s*)?(\d{1,2})\s+([a-z]{3})\s+(\d{4})\s+\d{2}:\d{2}(?::\d{2})?\s+(?:GMT|UTC?|Z|[+-]\d{4})$/i;
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** Date.parse rolls "02-30" over into March; a real calendar day is required. */
const isCalendarDay = (year: number, month: number, day: number) => month >= 1 && month <= 12 && day >= 1 && new Date(Date.UTC(year, month - 1, day)).getUTCDate() === day;

/** Epoch milliseconds from epoch milliseconds, ISO 8601 or RFC 2822/1123 text; offset-less times are UTC, never the server's zone. */
function toTime(value: unknown): number | typeof FAILED {
  let time = NaN;
  if (typeof value === 'number') time = new Date(value).getTime();
  else if (typeof value === 'string') {
    const text = value.trim();
    const iso = ISO.exec(text);
    const rfc = iso ? null : RFC.exec(text);
    if (iso && isCalendarDay(Number(iso[1]), Number(iso[2]), Number(iso[3]))) {
      time = Date.parse(iso[4] !== undefined && iso[7] === undefined ? `${text.replace(' ', 'T')}Z` : text.replace(' ', 'T'));
    } else if (rfc && isCalendarDay(Number(rfc[3]), MONTHS.indexOf(rfc[2].toLowerCase()) + 1, Number(rfc[1]))) {
      time = Date.parse(text);
    }
  }
  return Number.isFinite(time) ? time : FAILED;
}
