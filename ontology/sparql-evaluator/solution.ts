import type { ValueOf } from './expressions';
import type { TermTable } from './term-table';

// A solution (one row of bindings) is an array of term ids indexed by variable slot; 0 is
// unbound. Operators pass one row down and bind and unbind slots in place as they go, so a row
// that is kept (sorted, grouped, hashed) must be copied.

export type Row = number[];

/** Receives each solution; returns false to stop the producer (LIMIT reached, ASK answered). */
export type Sink = (row: Row) => boolean;

/** Produces the solutions of a pattern given the bindings already in `row`; false when stopped. */
export type Producer = (row: Row, sink: Sink) => boolean;

export const UNBOUND = 0;

/**
 * BIND and SELECT expressions: each solution of `input` with `slot` bound to the expression's value
 * (left unbound when the expression errs), unbound again once the row has gone down.
 */
export function extendedBy(input: Producer, value: ValueOf, slot: number, terms: TermTable): Producer {
  return (row, sink) =>
    input(row, (solution) => {
      const term = value(solution);
      if (term === undefined) return sink(solution);
      solution[slot] = terms.idOf(term);
      const more = sink(solution);
      solution[slot] = UNBOUND;
      return more;
    });
}
