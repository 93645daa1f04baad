import type * as Sparql from 'sparqljs';
import { AlgebraNode, certainlyBound, expressionVariables, maybeBound, translatePattern, variablesOf } from './algebra';
import { BgpContext, compileBgp } from './bgp';
import { filtered, guarded, PendingCondition, splitTestable } from './conditions';
import { compileCondition, compileExpression, Condition, ExpressionScope, termOfConstant } from './expressions';
import { orderJoinInputs } from './join-order';
import { withMask } from './masking';
import { compilePath } from './paths';
import { extendedBy } from './solution';
import type { Producer, Row, Sink } from './solution';
import { Table, tableJoin } from './table-join';
import { UnsupportedQuery } from './unsupported';

// Compiles the algebra of a WHERE clause into producers. Every operator joins with the row it is
// given (a bind join): a pattern is evaluated with the bindings of what came before it. Where
// that would change a pattern's meaning (see masking.ts), the pattern sees those variables as
// unbound and its solutions are joined with the row afterwards. FILTER conditions move down to
// the first operator after which every variable they read is bound (conditions.ts).

/** What is known about the row an operator receives. */
export interface Entry {
  /** Variables bound in every incoming row. */
  readonly certain: ReadonlySet<string>;
  /** Variables that may be bound in an incoming row. */
  readonly maybe: ReadonlySet<string>;
  /** Variables an EXISTS substitutes from the row it tests: never masked. */
  readonly substituted: ReadonlySet<string>;
}

export const EMPTY_ENTRY: Entry = { certain: new Set(), maybe: new Set(), substituted: new Set() };

/** A subquery planned apart from the outer query: its projected variables, and what evaluates it (once, on first use). */
export interface PlannedSubquery {
  readonly variables: readonly string[];
  /** The solutions: term ids in the order of `variables`, 0 where unbound. */
  run(): (readonly number[])[];
}

export interface PatternContext extends BgpContext {
  planSubquery(query: Sparql.SelectQuery): PlannedSubquery;
}

const union = (...sets: ReadonlySet<string>[]): Set<string> => {
  const result = new Set<string>();
  for (const set of sets) for (const name of set) result.add(name);
  return result;
};

const emit: Producer = (row, sink) => sink(row);

/** Whether the node or one below it (not inside expressions) passes the test. */
function containsNode(node: AlgebraNode, test: (node: AlgebraNode) => boolean): boolean {
  if (test(node)) return true;
  switch (node.type) {
    case 'join':
      return node.inputs.some((input) => containsNode(input, test));
    case 'leftjoin':
    case 'minus':
      return containsNode(node.left, test) || containsNode(node.right, test);
    case 'filter':
    case 'extend':
      return containsNode(node.input, test);
    case 'union':
      return node.branches.some((branch) => containsNode(branch, test));
    default:
      return false;
  }
}

export class PatternCompiler {
  constructor(private readonly context: PatternContext) {}

  /** The producer of a node, for rows described by `entry`, testing `pending` as early as it can. */
  compile(node: AlgebraNode, entry: Entry, pending: readonly PendingCondition[]): Producer {
    const mentioned = variablesOf(node);
    const certain = certainlyBound(node);
    const masked = [...entry.maybe].filter((name) => mentioned.has(name) && !certain.has(name) && !entry.substituted.has(name));
    if (!masked.length) return this.compileUnmasked(node, entry, pending);
    const maskedNames = new Set(masked);
    const inner: Entry = {
      certain: new Set([...entry.certain].filter((name) => !maskedNames.has(name))),
      maybe: new Set([...entry.maybe].filter((name) => !maskedNames.has(name))),
      substituted: entry.substituted,
    };
    // Conditions reading a masked variable are tested once the outer value is back.
    const touchesMask = (condition: PendingCondition) => [...condition.relevant].some((name) => maskedNames.has(name));
    const producer = this.compileUnmasked(node, inner, pending.filter((condition) => !touchesMask(condition)));
    return filtered(withMask(producer, masked.map((name) => this.context.slots.slot(name))), pending.filter(touchesMask));
  }

  private compileUnmasked(node: AlgebraNode, entry: Entry, pending: readonly PendingCondition[]): Producer {
    const [atEntry, later] = splitTestable(pending, entry.certain);
    return guarded(this.compileNode(node, entry, later), atEntry);
  }

  private compileNode(node: AlgebraNode, entry: Entry, pending: readonly PendingCondition[]): Producer {
    switch (node.type) {
      case 'unit':
        return filtered(emit, pending);
      case 'bgp':
        return compileBgp(node.triples, entry.certain, pending, this.context);
      case 'path':
        return compilePath(node, pending, this.context);
      case 'join':
        return this.compileJoin(node.inputs, entry, pending);
      case 'filter': {
        const scope = this.scope(union(entry.certain, certainlyBound(node.input)), union(entry.maybe, maybeBound(node.input)), entry.substituted);
        const inScope = union(entry.maybe, maybeBound(node.input));
        const own = node.conditions.map((expression) => this.pendingCondition(expression, scope, inScope));
        return this.compile(node.input, entry, [...pending, ...own]);
      }
      case 'leftjoin':
        return this.compileLeftJoin(node, entry, pending);
      case 'union': {
        const branches = node.branches.map((branch) => this.compile(branch, entry, pending));
        return (row, sink) => {
          for (const branch of branches) if (!branch(row, sink)) return false;
          return true;
        };
      }
      case 'minus':
        return this.compileMinus(node, entry, pending);
      case 'extend':
        return this.compileExtend(node, entry, pending);
      case 'values': {
        const { terms, slots } = this.context;
        const table: Table = { slots: node.variables.map((name) => slots.slot(name)), rows: node.rows.map((row) => row.map((term) => (term ? terms.idOf(termOfConstant(term)) : 0))) };
        return filtered(tableJoin(() => table, this.keySlots(node, entry), this.context.deadline), pending);
      }
      case 'subquery': {
        const subquery = this.context.planSubquery(node.query);
        const columns = subquery.variables.map((name) => this.context.slots.slot(name));
        return filtered(tableJoin(() => ({ slots: columns, rows: subquery.run() }), this.keySlots(node, entry), this.context.deadline), pending);
      }
    }
  }

  /** Slots every incoming row binds and every row of the node binds: a table join hashes on them. */
  private keySlots(node: AlgebraNode, entry: Entry): number[] {
    const certain = certainlyBound(node);
    return [...entry.certain].filter((name) => certain.has(name)).map((name) => this.context.slots.slot(name));
  }

  /** Joins the parts in the order join-order.ts chooses, each with the bindings of those before it. */
  private compileJoin(inputs: AlgebraNode[], entry: Entry, pending: readonly PendingCondition[]): Producer {
    const ordered = orderJoinInputs(inputs, entry.certain, this.context);
    let certain: ReadonlySet<string> = entry.certain;
    let maybe: ReadonlySet<string> = entry.maybe;
    let waiting = pending;
    const producers = ordered.map((input) => {
      const after = union(certain, certainlyBound(input));
      const [testable, later] = splitTestable(waiting, after);
      waiting = later;
      const producer = this.compile(input, { certain, maybe, substituted: entry.substituted }, testable);
      certain = after;
      maybe = union(maybe, maybeBound(input));
      return producer;
    });
    const chained = producers.reduceRight<Producer | undefined>((next, producer) => (next ? (row, sink) => producer(row, (solution) => next(solution, sink)) : producer), undefined) ?? emit;
    return filtered(chained, waiting);
  }

  /** OPTIONAL: each left solution with its matches on the right that meet the condition, or alone when none does. */
  private compileLeftJoin(node: AlgebraNode & { type: 'leftjoin' }, entry: Entry, pending: readonly PendingCondition[]): Producer {
    const leftCertain = union(entry.certain, certainlyBound(node.left));
    const [leftPending, rest] = splitTestable(pending, leftCertain);
    const left = this.compile(node.left, entry, leftPending);
    const rightEntry: Entry = { certain: leftCertain, maybe: union(entry.maybe, maybeBound(node.left)), substituted: entry.substituted };
    const scopeCertain = union(leftCertain, certainlyBound(node.right));
    const scopeMaybe = union(rightEntry.maybe, maybeBound(node.right));
    const scope = this.scope(scopeCertain, scopeMaybe, entry.substituted);
    const condition = node.condition.map((expression) => this.pendingCondition(expression, scope, scopeMaybe));
    const right = this.compile(node.right, rightEntry, condition);
    const leftJoin: Producer = (row, sink) =>
      left(row, (solution) => {
        let matched = false;
        const more = right(solution, (joined) => {
          matched = true;
          return sink(joined);
        });
        if (!more) return false;
        return matched ? true : sink(solution);
      });
    return filtered(leftJoin, rest);
  }

  /** MINUS: the right side is evaluated once, apart; a left solution goes when a right one shares a variable with it and agrees on all shared. */
  private compileMinus(node: AlgebraNode & { type: 'minus' }, entry: Entry, pending: readonly PendingCondition[]): Producer {
    const leftCertain = union(entry.certain, certainlyBound(node.left));
    const [leftPending, rest] = splitTestable(pending, leftCertain);
    const left = this.compile(node.left, entry, leftPending);
    const right = this.compile(node.right, EMPTY_ENTRY, []);
    const { slots, deadline } = this.context;
    const columns = [...variablesOf(node.right)].map((name) => slots.slot(name));
    const rightCertain = certainlyBound(node.right);
    const hashOn = [...rightCertain].find((name) => leftCertain.has(name));
    const hashSlot = hashOn === undefined ? -1 : slots.slot(hashOn);
    let removers: { all: number[][]; byKey: Map<number, number[][]> } | undefined;
    const load = (size: number) => {
      const all: number[][] = [];
      const byKey = new Map<number, number[][]>();
      right(new Array<number>(size).fill(0), (solution) => {
        deadline.tick();
        const copy = solution.slice();
        all.push(copy);
        if (hashSlot >= 0) {
          const bucket = byKey.get(copy[hashSlot]);
          if (bucket) bucket.push(copy);
          else byKey.set(copy[hashSlot], [copy]);
        }
        return true;
      });
      return { all, byKey };
    };
    const removes = (candidate: number[], solution: Row): boolean => {
      let shared = false;
      for (const column of columns) {
        const value = candidate[column];
        const current = solution[column];
        if (value === 0 || current === 0) continue;
        if (value !== current) return false;
        shared = true;
      }
      return shared;
    };
    const minus: Producer = (row, sink) => {
      removers ??= load(row.length);
      const { all, byKey } = removers;
      return left(row, (solution) => {
        const candidates = hashSlot >= 0 ? byKey.get(solution[hashSlot]) ?? [] : all;
        for (const candidate of candidates) if (removes(candidate, solution)) return true;
        return sink(solution);
      });
    };
    return filtered(minus, rest);
  }

  /** BIND: the expression's value, or the variable left unbound when it fails. */
  private compileExtend(node: AlgebraNode & { type: 'extend' }, entry: Entry, pending: readonly PendingCondition[]): Producer {
    const inputCertain = union(entry.certain, certainlyBound(node.input));
    const [inputPending, rest] = splitTestable(
      pending.filter((condition) => !condition.relevant.has(node.variable)),
      inputCertain,
    );
    const input = this.compile(node.input, entry, inputPending);
    const scope = this.scope(inputCertain, union(entry.maybe, maybeBound(node.input)), entry.substituted);
    const value = compileExpression(node.expression, scope);
    const slot = this.context.slots.slot(node.variable);
    return filtered(extendedBy(input, value, slot, this.context.terms), [...rest, ...pending.filter((condition) => condition.relevant.has(node.variable))]);
  }

  private pendingCondition(expression: Sparql.Expression, scope: ExpressionScope, inScope: ReadonlySet<string>): PendingCondition {
    const relevant = new Set([...expressionVariables(expression)].filter((name) => inScope.has(name)));
    return { test: compileCondition(expression, scope), relevant };
  }

  /**
   * The scope of expressions evaluated where `certain` and `maybe` describe the row. An EXISTS
   * pattern there sees the row's bindings substituted in (§17.4.1.4): every variable that may be
   * bound is substituted, never masked.
   */
  scope(certain: ReadonlySet<string>, maybe: ReadonlySet<string>, substituted: ReadonlySet<string>): ExpressionScope {
    const { slots, terms } = this.context;
    return {
      terms,
      slot: (name) => slots.slot(name),
      exists: (pattern) => this.compileExists(pattern, { certain, maybe, substituted: union(substituted, maybe) }),
    };
  }

  private compileExists(pattern: Sparql.Pattern, entry: Entry): Condition {
    const node = translatePattern(pattern);
    if (containsNode(node, (inner) => inner.type === 'minus' || inner.type === 'values' || inner.type === 'extend' || inner.type === 'subquery')) throw new UnsupportedQuery('MINUS, VALUES, BIND or a subquery inside EXISTS');
    const producer = this.compile(node, entry, []);
    const stop: Sink = () => false;
    return (row) => !producer(row, stop);
  }
}
