/**
 * The variables of one query scope (a query or subquery), each at a fixed index of its rows.
 * Slot 0 is never used, so a fresh row of zeros is a row with nothing bound.
 */
export class SlotTable {
  private readonly indexes = new Map<string, number>();
  readonly names: string[] = [''];

  slot(name: string): number {
    let index = this.indexes.get(name);
    if (index === undefined) {
      index = this.names.length;
      this.names.push(name);
      this.indexes.set(name, index);
    }
    return index;
  }

  has(name: string): boolean {
    return this.indexes.has(name);
  }

  /** A row with every slot unbound; call after planning, once every slot is known. */
  emptyRow(): number[] {
    return new Array<number>(this.names.length).fill(0);
  }
}
