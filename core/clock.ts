import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';

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
 * `advance`), for this process and the database statements it sends, until `release`. Given a
 * `sharedThrough` file, it writes the held time there (nothing when released), which processes
 * the test starts with WEFT_TEST_CLOCK_FILE read (FileHeldClock): the test moves their time too.
 */
export class SettableClock implements Clock {
  private heldAt: number | undefined;

  constructor(private readonly sharedThrough?: string) {
    this.share();
  }

  now(): number {
    return this.heldAt ?? Date.now();
  }

  databaseTime(): Date | null {
    return this.heldAt === undefined ? null : new Date(this.heldAt);
  }

  set(at: Date | number): void {
    this.heldAt = typeof at === 'number' ? at : at.getTime();
    this.share();
  }

  advance(ms: number): void {
    this.heldAt = this.now() + ms;
    this.share();
  }

  /** Back to the system clock. */
  release(): void {
    if (this.heldAt === undefined) return;
    this.heldAt = undefined;
    this.share();
  }

  /** Removes the shared file (the test run is over). */
  close(): void {
    if (this.sharedThrough) rmSync(this.sharedThrough, { force: true });
  }

  private share(): void {
    if (!this.sharedThrough) return;
    // Renamed into place, so a reader sees the old time or the new, never part of one.
    const next = `${this.sharedThrough}.next`;
    writeFileSync(next, this.heldAt === undefined ? '' : String(this.heldAt));
    renameSync(next, this.sharedThrough);
  }
}

/**
 * The clock of a process a test started (WEFT_TEST_CLOCK_FILE): the time the test's SettableClock
 * holds, read from its file at each look (a few microseconds, tests only), or the system clock's
 * while it holds none. Request windows, leases and expiry then follow the test's moves in every
 * process, so no test waits for a window to turn.
 */
export class FileHeldClock implements Clock {
  constructor(private readonly file: string) {}

  now(): number {
    return this.held() ?? Date.now();
  }

  databaseTime(): Date | null {
    const held = this.held();
    return held === undefined ? null : new Date(held);
  }

  private held(): number | undefined {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      return undefined;
    }
    return text === '' ? undefined : Number(text);
  }
}
