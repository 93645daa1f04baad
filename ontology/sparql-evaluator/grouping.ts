import type * as Sparql from 'sparqljs';
import { Accumulator, accumulatorFor } from './aggregates';
import type { Deadline } from './deadline';
import { compileExpression, ExpressionScope, ValueOf } from './expressions';
import type { SlotTable } from './slots';
import type { Producer, Row, Sink } from './solution';
import type { TermTable } from './term-table';
import type { Term } from './terms';
import { UnsupportedQuery } from './unsupported';

// GROUP BY and aggregates (SPARQL 1.1 §18.2.4.1): the WHERE solutions are split by the values of
// the grouping expressions, each group feeds one accumulator per aggregate, and each group becomes
// one row holding its keys and its aggregates' values (in slots of their own). Without GROUP BY
// every solution is in one group, which exists even when there are none (COUNT(*) is then 0).

export interface GroupingPlan {
  /** Replaces the WHERE producer: one row per group. */
  readonly groups: (source: Producer) => (row: Row, sink: Sink) => boolean;
  /** Where projection, HAVING and ORDER BY read an aggregate's value. */
  readonly aggregateSlot: (expression: Sparql.AggregateExpression) => number;
}

const isWildcard = (expression: unknown): boolean => (expression as { termType?: string }).termType === 'Wildcard';

interface AggregateSpec {
  readonly expression: Sparql.AggregateExpression;
  readonly slot: number;
  /** The argument's value per solution; undefined for COUNT(*). */
  readonly argument: ValueOf | undefined;
  /** When the argument is a variable: its slot, whose id is the value (no decoding needed). */
  readonly argumentSlot: number;
}

interface KeySpec {
  readonly slot: number;
  readonly value: ValueOf;
  /** When the key is a variable: its slot. */
  readonly sourceSlot: number;
}

/** The slot of an expression that is a plain variable, or -1. */
const variableSlot = (expression: unknown, slots: SlotTable): number => ((expression as Sparql.Term).termType === 'Variable' ? slots.slot((expression as Sparql.VariableTerm).value) : -1);

/**
 * Plans grouping for `query`. `inputScope` compiles expressions over WHERE solutions;
 * `patternSlots` are the slots COUNT(DISTINCT *) compares solutions on.
 */
export function planGrouping(query: Sparql.SelectQuery, inputScope: ExpressionScope, slots: SlotTable, terms: TermTable, patternSlots: readonly number[], deadline: Deadline): GroupingPlan {
  const keys: KeySpec[] = (query.group ?? []).map((grouping, index) => {
    const expression = grouping.expression as Sparql.Expression;
    const plainVariable = !grouping.variable && (expression as Sparql.Term).termType === 'Variable';
    const slot = slots.slot(grouping.variable?.value ?? (plainVariable ? (expression as Sparql.VariableTerm).value : `#group${index}`));
    return { slot, value: compileExpression(expression, inputScope), sourceSlot: variableSlot(expression, slots) };
  });
  const aggregates: AggregateSpec[] = [];
  const byText = new Map<string, AggregateSpec>();
  const aggregateSlot = (expression: Sparql.AggregateExpression): number => {
    const text = JSON.stringify(expression);
    let spec = byText.get(text);
    if (!spec) {
      const wildcard = isWildcard(expression.expression);
      if (wildcard && expression.aggregation.toLowerCase() !== 'count') throw new UnsupportedQuery(`${expression.aggregation}(*)`);
      const argument = wildcard ? undefined : compileExpression(expression.expression as Sparql.Expression, inputScope);
      spec = { expression, slot: slots.slot(`#aggregate${aggregates.length}`), argument, argumentSlot: wildcard ? -1 : variableSlot(expression.expression, slots) };
      aggregates.push(spec);
      byText.set(text, spec);
    }
    return spec.slot;
  };

  const groups = (source: Producer) => (row: Row, sink: Sink): boolean => {
    type Group = { keys: number[]; accumulators: Accumulator[]; rows: Set<string> | undefined };
    const newGroup = (keyIds: number[]): Group => ({
      keys: keyIds,
      // COUNT(DISTINCT *) compares whole solutions (below), not the value it is fed.
      accumulators: aggregates.map((spec) => accumulatorFor(spec.argument ? spec.expression : { ...spec.expression, distinct: false }, terms)),
      rows: aggregates.some((spec) => spec.argument === undefined && spec.expression.distinct) ? new Set() : undefined,
    });
    // One key (the common case) is its id; several are their ids joined.
    const byKey = new Map<number | string, Group>();
    const keyIds = new Array<number>(keys.length);
    source(row, (solution) => {
      deadline.tick();
      for (let k = 0; k < keys.length; k++) {
        const spec = keys[k];
        if (spec.sourceSlot >= 0) keyIds[k] = solution[spec.sourceSlot];
        else {
          const value = spec.value(solution);
          keyIds[k] = value === undefined ? 0 : terms.idOf(value);
        }
      }
      const key = keyIds.length === 1 ? keyIds[0] : keyIds.join(',');
      let group = byKey.get(key);
      if (!group) {
        group = newGroup(keyIds.slice());
        byKey.set(key, group);
      }
      // COUNT(DISTINCT *): a solution already seen in this group counts no more.
      let newSolution = true;
      if (group.rows) {
        const solutionKey = patternSlots.map((slot) => solution[slot]).join(',');
        newSolution = !group.rows.has(solutionKey);
        group.rows.add(solutionKey);
      }
      for (let a = 0; a < aggregates.length; a++) {
        const spec = aggregates[a];
        if (spec.argumentSlot >= 0) group.accumulators[a].addId(solution[spec.argumentSlot]);
        else if (spec.argument) group.accumulators[a].addTerm(spec.argument(solution));
        else if (newSolution || !spec.expression.distinct) group.accumulators[a].addTerm(WILDCARD_VALUE);
      }
      return true;
    });
    if (byKey.size === 0 && keys.length === 0) byKey.set(0, newGroup([]));
    const output = row.slice();
    for (const group of byKey.values()) {
      for (let k = 0; k < keys.length; k++) output[keys[k].slot] = group.keys[k];
      for (let a = 0; a < aggregates.length; a++) {
        const value = group.accumulators[a].result();
        output[aggregates[a].slot] = value === undefined ? 0 : terms.idOf(value);
      }
      if (!sink(output)) return false;
    }
    return true;
  };
  return { groups, aggregateSlot };
}

/** What COUNT(*) counts for each solution (any bound term: the accumulator only counts it). */
const WILDCARD_VALUE: Term = { termType: 'NamedNode', value: '*' };
