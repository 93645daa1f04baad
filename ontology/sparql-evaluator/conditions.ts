import type { Condition } from './expressions';
import type { Producer } from './solution';

/**
 * A FILTER condition on its way to the earliest operator after which it can be tested: it reads
 * only `relevant` (its variables that the group may bind), so once all of those are bound, testing
 * it there gives what testing it at the end of the group would.
 */
export interface PendingCondition {
  readonly test: Condition;
  readonly relevant: ReadonlySet<string>;
}

export const isSubset = (names: ReadonlySet<string>, of: ReadonlySet<string>): boolean => {
  for (const name of names) if (!of.has(name)) return false;
  return true;
};

/** The conditions that `bound` makes testable, and the rest. */
export function splitTestable(conditions: readonly PendingCondition[], bound: ReadonlySet<string>): [PendingCondition[], PendingCondition[]] {
  const testable: PendingCondition[] = [];
  const later: PendingCondition[] = [];
  for (const condition of conditions) (isSubset(condition.relevant, bound) ? testable : later).push(condition);
  return [testable, later];
}

/** One test for several conditions (all must hold). */
export function allOf(conditions: readonly PendingCondition[]): Condition | undefined {
  if (conditions.length === 0) return undefined;
  if (conditions.length === 1) return conditions[0].test;
  const tests = conditions.map((condition) => condition.test);
  return (row) => {
    for (const test of tests) if (!test(row)) return false;
    return true;
  };
}

/** Passes on the producer's solutions that meet the conditions. */
export function filtered(producer: Producer, conditions: readonly PendingCondition[]): Producer {
  const test = allOf(conditions);
  if (!test) return producer;
  return (row, sink) => producer(row, (solution) => (test(solution) ? sink(solution) : true));
}

/** Runs the producer only for incoming rows that meet the conditions (they read bindings already present). */
export function guarded(producer: Producer, conditions: readonly PendingCondition[]): Producer {
  const test = allOf(conditions);
  if (!test) return producer;
  return (row, sink) => (test(row) ? producer(row, sink) : true);
}
