import * as comparison from './comparison';
import type { Deadline } from './deadline';
import type { ValueOf } from './expressions';
import type { Row } from './solution';
import type { Term } from './terms';

// Imported values bound once (see index.ts: tsx turns every use of an imported name into getter calls).
const { orderTerms } = comparison;

// ORDER BY: solutions sorted by their keys' values in ORDER BY's total order (comparison.ts),
// ties kept in the order they came. With a LIMIT only the first offset + limit can be answered,
// so the collector keeps just those in a heap whose top is the worst kept (a top-k): most
// solutions are turned away after one comparison.

export interface SortKey {
  readonly value: ValueOf;
  readonly descending: boolean;
}

interface Entry {
  readonly row: Row;
  readonly keys: (Term | undefined)[];
  readonly arrival: number;
}

export class SortedCollector {
  private readonly entries: Entry[] = [];
  private arrivals = 0;

  constructor(
    private readonly keys: readonly SortKey[],
    /** How many of the first solutions are wanted (offset + limit), or undefined for all. */
    private readonly keep: number | undefined,
    private readonly deadline: Deadline,
  ) {}

  private readonly compare = (a: Entry, b: Entry): number => {
    // A sort of many solutions is long work of its own: it counts toward the time limit too.
    this.deadline.tick();
    for (let i = 0; i < this.keys.length; i++) {
      const order = orderTerms(a.keys[i], b.keys[i]);
      if (order !== 0) return this.keys[i].descending ? -order : order;
    }
    return a.arrival - b.arrival;
  };

  add(row: Row): void {
    this.deadline.tick();
    const keys = this.keys.map((key) => key.value(row));
    const arrival = this.arrivals++;
    const { entries, keep } = this;
    if (keep === undefined || entries.length < keep) {
      entries.push({ row: row.slice(), keys, arrival });
      if (keep !== undefined) this.siftUp(entries.length - 1);
      return;
    }
    if (keep === 0) return;
    const candidate = { row, keys, arrival };
    if (this.compare(candidate, entries[0]) >= 0) return;
    entries[0] = { row: row.slice(), keys, arrival };
    this.siftDown(0);
  }

  /** Heap order: a parent sorts after its children (the worst kept is at the top). */
  private siftUp(at: number): void {
    const { entries } = this;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (this.compare(entries[parent], entries[at]) >= 0) return;
      [entries[parent], entries[at]] = [entries[at], entries[parent]];
      at = parent;
    }
  }

  private siftDown(at: number): void {
    const { entries } = this;
    for (;;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let worst = at;
      if (left < entries.length && this.compare(entries[left], entries[worst]) > 0) worst = left;
      if (right < entries.length && this.compare(entries[right], entries[worst]) > 0) worst = right;
      if (worst === at) return;
      [entries[worst], entries[at]] = [entries[at], entries[worst]];
      at = worst;
    }
  }

  /** The sorted solutions (at most `keep`). */
  finish(): Row[] {
    this.deadline.check();
    return this.entries.sort(this.compare).map((entry) => entry.row);
  }
}
