/**
 * Where time decides behaviour, it comes from a clock in the process's dependencies, so a test can
 * fix it instead of waiting for it.
 */
export interface Clock {
  /** Now, in milliseconds since the epoch, for what this process decides alone (a lease's end here). */
  now(): number;
  /**
   * The time to hand the database where its time decides across processes (request windows): null
   * for the database's own (clock_timestamp()), which every process shares; a test clock's own time.
   */
  databaseTime(): Date | null;
}

/** Production's clock: this machine's for local decisions, the database's for shared ones. */
export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  databaseTime: () => null,
});

/**
 * A clock a test holds still and moves: the system clock until `set`, then the set time (moved by
 * `advance`), for this process and the database statements it sends, until `release`.
 */
export class SettableClock implements Clock {
  private heldAt: number | undefined;

  now(): number {
    return this.heldAt ?? Date.now();
  }

  databaseTime(): Date | null {
    return this.heldAt === undefined ? null : new Date(this.heldAt);
  }

  set(at: Date | number): void {
    this.heldAt = typeof at === 'number' ? at : at.getTime();
  }

  advance(ms: number): void {
    this.heldAt = this.now() + ms;
  }

  /** Back to the system clock. */
  release(): void {
    this.heldAt = undefined;
  }
}
