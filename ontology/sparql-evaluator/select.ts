import type * as Sparql from 'sparqljs';
import { AlgebraNode, certainlyBound, expressionVariables, hasAggregate, isBlankVariable, maybeBound, projectedVariables, translateGroup, valuesNode } from './algebra';
import { compileCondition, compileExpression, ExpressionScope, termOfConstant } from './expressions';
import { planGrouping } from './grouping';
import { SortedCollector, SortKey } from './ordering';
import { EMPTY_ENTRY, PatternCompiler, PatternContext, PlannedSubquery } from './patterns';
import { SlotTable } from './slots';
import { extendedBy } from './solution';
import type { Producer, Row } from './solution';
import { tableJoin } from './table-join';
import { UnsupportedQuery } from './unsupported';

// A SELECT (and the solutions of ASK and CONSTRUCT) from pattern to answer, in the order of
// SPARQL 1.1 §18.2.4-5: WHERE, GROUP BY and aggregates, HAVING, a trailing VALUES, SELECT
// expressions, ORDER BY, projection, DISTINCT, OFFSET and LIMIT.

export type SharedContext = Omit<PatternContext, 'slots' | 'planSubquery'>;

export interface SelectPlan {
  /** Projected variables, in order. */
  readonly variables: readonly string[];
  readonly projectedSlots: readonly number[];
  readonly slots: SlotTable;
  /** Runs the query, passing each answer's full row until `consume` returns false. */
  run(consume: (row: Row) => boolean): void;
}

const isWildcard = (variables: Sparql.SelectQuery['variables']): boolean => variables.length === 1 && (variables[0] as { termType?: string }).termType === 'Wildcard';

export function planSelect(query: Sparql.SelectQuery, shared: SharedContext): SelectPlan {
  const { terms, deadline } = shared;
  const slots = new SlotTable();
  const compiler = new PatternCompiler({ ...shared, slots, planSubquery: (subquery) => planSubquery(subquery, shared) });
  const expressions = isWildcard(query.variables) ? [] : (query.variables as Sparql.Variable[]).filter((v): v is Sparql.VariableExpression => 'expression' in v);
  const aggregated = Boolean(query.group?.length) || hasAggregate(expressions) || hasAggregate(query.having ?? []) || hasAggregate(query.order ?? []);

  let where: AlgebraNode = translateGroup(query.where ?? []);
  const trailingValues = query.values ? valuesNode({ values: query.values }) : undefined;
  if (trailingValues && !aggregated) where = { type: 'join', inputs: [trailingValues, where] };
  let source: Producer = compiler.compile(where, EMPTY_ENTRY, []);
  let certain: ReadonlySet<string> = certainlyBound(where);
  // A copy: the SELECT expressions below add to it, and the node's own set is shared.
  let inScope = new Set(maybeBound(where));
  let scope: ExpressionScope = compiler.scope(certain, inScope, new Set());

  if (aggregated) {
    // COUNT(DISTINCT *) compares solutions on their variables (blank nodes of patterns are not any).
    const patternSlots = [...inScope].filter((name) => !isBlankVariable(name)).map((name) => slots.slot(name));
    const grouping = planGrouping(query, scope, slots, terms, patternSlots, deadline);
    source = grouping.groups(source);
    const keyNames = (query.group ?? []).map((grouping, index) => grouping.variable?.value ?? ((grouping.expression as Sparql.Term).termType === 'Variable' ? (grouping.expression as Sparql.VariableTerm).value : `#group${index}`));
    certain = new Set();
    inScope = new Set(keyNames);
    scope = { ...compiler.scope(certain, inScope, new Set()), aggregate: grouping.aggregateSlot };
    if (query.having?.length) {
      const tests = query.having.map((expression) => compileCondition(expression, scope));
      const grouped = source;
      source = (row, sink) => grouped(row, (solution) => (tests.every((test) => test(solution)) ? sink(solution) : true));
    }
    if (trailingValues) {
      const table = { slots: trailingValues.variables.map((name) => slots.slot(name)), rows: trailingValues.rows.map((row) => row.map((term) => (term ? terms.idOf(termOfConstant(term)) : 0))) };
      const join = tableJoin(() => table, [], deadline);
      const grouped = source;
      source = (row, sink) => grouped(row, (solution) => join(solution, sink));
      for (const name of trailingValues.variables) inScope.add(name);
    }
  }

  for (const { expression, variable } of expressions) {
    if (inScope.has(variable.value)) throw new UnsupportedQuery('a SELECT expression assigning a variable already in scope');
    const value = compileExpression(expression, scope);
    const slot = slots.slot(variable.value);
    source = extendedBy(source, value, slot, terms);
    inScope.add(variable.value);
  }

  const variables = isWildcard(query.variables) ? [...projectedVariables(query)] : (query.variables as Sparql.Variable[]).map((v) => ('expression' in v ? v.variable.value : v.value));
  const projectedSlots = variables.map((name) => slots.slot(name));
  const order: SortKey[] = (query.order ?? []).map((ordering) => ({ value: compileExpression(ordering.expression, scope), descending: Boolean(ordering.descending) }));
  const distinct = Boolean(query.distinct || query.reduced);
  // DISTINCT may go before the sort when the sort keys read only projected variables (equal rows sort alike).
  const projectedNames = new Set(variables);
  const distinctFirst = distinct && (query.order ?? []).every((ordering) => !hasAggregate(ordering.expression) && [...expressionVariables(ordering.expression)].every((name) => projectedNames.has(name)));
  const offset = query.offset ?? 0;
  const limit = query.limit;

  const run = (consume: (row: Row) => boolean): void => {
    if (limit === 0) return;
    const row = slots.emptyRow();
    const seen = new Set<string>();
    const isNew = (solution: Row): boolean => {
      const key = projectedSlots.length === 1 ? String(solution[projectedSlots[0]]) : projectedSlots.map((slot) => solution[slot]).join(',');
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    };
    let skipped = 0;
    let delivered = 0;
    const deliver = (solution: Row, dedupe: boolean): boolean => {
      if (dedupe && !isNew(solution)) return true;
      if (skipped < offset) {
        skipped++;
        return true;
      }
      delivered++;
      return consume(solution) && (limit === undefined || delivered < limit);
    };
    if (!order.length) {
      source(row, (solution) => deliver(solution, distinct));
      return;
    }
    const keep = limit !== undefined && (!distinct || distinctFirst) ? offset + limit : undefined;
    const collector = new SortedCollector(order, keep, deadline);
    source(row, (solution) => {
      if (!distinctFirst || isNew(solution)) collector.add(solution);
      return true;
    });
    for (const solution of collector.finish()) if (!deliver(solution, distinct && !distinctFirst)) return;
  };
  return { variables, projectedSlots, slots, run };
}

/** A subquery, planned now, evaluated once when first needed. */
function planSubquery(query: Sparql.SelectQuery, shared: SharedContext): PlannedSubquery {
  const plan = planSelect(query, shared);
  return {
    variables: plan.variables,
    run: () => {
      const rows: number[][] = [];
      plan.run((row) => {
        rows.push(plan.projectedSlots.map((slot) => row[slot]));
        return true;
      });
      return rows;
    },
  };
}
