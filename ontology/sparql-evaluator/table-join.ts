import type { Deadline } from './deadline';
import type { Producer } from './solution';

// Joining the row with a table of solutions evaluated apart from it: VALUES data, and subqueries
// (which see no outer bindings: their LIMIT or GROUP BY would mean something else if they did).
// When the row always binds some of the table's variables, the table is hashed on them once.

export interface Table {
  /** The row slot of each column. */
  readonly slots: readonly number[];
  /** Term ids by column; 0 where the solution leaves the variable unbound. */
  readonly rows: readonly (readonly number[])[];
}

interface Index {
  byKey: Map<string, (readonly number[])[]>;
  /** Rows unbound in a key column: compatible with any key. */
  unkeyed: (readonly number[])[];
}

/**
 * The join of each incoming row with the table (`load` runs once, on first use). `keySlots` are
 * slots every incoming row binds.
 */
export function tableJoin(load: () => Table, keySlots: readonly number[], deadline: Deadline): Producer {
  let table: Table | undefined;
  let index: Index | undefined;
  let keyColumns: number[] = [];
  const prepare = (): Table => {
    table = load();
    keyColumns = keySlots.map((slot) => table!.slots.indexOf(slot)).filter((column) => column >= 0);
    if (keyColumns.length) {
      index = { byKey: new Map(), unkeyed: [] };
      for (const tableRow of table.rows) {
        if (keyColumns.some((column) => tableRow[column] === 0)) index.unkeyed.push(tableRow);
        else {
          const key = keyColumns.map((column) => tableRow[column]).join(',');
          const bucket = index.byKey.get(key);
          if (bucket) bucket.push(tableRow);
          else index.byKey.set(key, [tableRow]);
        }
      }
    }
    return table;
  };
  return (row, sink) => {
    const { slots, rows } = table ?? prepare();
    const width = slots.length;
    const visit = (candidates: readonly (readonly number[])[]): boolean => {
      for (const tableRow of candidates) {
        deadline.tick();
        let compatible = true;
        for (let c = 0; c < width; c++) {
          const value = tableRow[c];
          const current = row[slots[c]];
          if (value !== 0 && current !== 0 && value !== current) {
            compatible = false;
            break;
          }
        }
        if (!compatible) continue;
        const bound: number[] = [];
        for (let c = 0; c < width; c++) {
          if (tableRow[c] !== 0 && row[slots[c]] === 0) {
            row[slots[c]] = tableRow[c];
            bound.push(slots[c]);
          }
        }
        const ok = sink(row);
        for (const slot of bound) row[slot] = 0;
        if (!ok) return false;
      }
      return true;
    };
    if (!index) return visit(rows);
    const key = keyColumns.map((column) => row[slots[column]]).join(',');
    const bucket = index.byKey.get(key);
    return (bucket === undefined || visit(bucket)) && visit(index.unkeyed);
  };
}
