import type { Knex } from 'knex';
import { env } from '../../support/environment';

export { until } from '../../support/polling';

/** A lock the test holds in a transaction of its own, which stops another process's transaction at the statement that needs it. */
export interface HeldLock {
  /** The statements waiting for this lock now (none: nobody has reached it yet). */
  waiting(): Promise<string[]>;
  release(): Promise<void>;
}

/**
 * Takes the locks `sql` takes (SELECT … FOR UPDATE, LOCK TABLE …) in a transaction held open until
 * release(), so a process reaching a statement that needs them waits there: a test then knows
 * where that process is, and can fault it at exactly that point.
 */
export async function holdLock(sql: string, bindings: readonly Knex.RawBinding[] = []): Promise<HeldLock> {
  const { db } = env();
  const trx = await db.transaction();
  try {
    const { rows } = await trx.raw('SELECT pg_backend_pid() AS pid');
    await trx.raw(sql, bindings);
    const pid = Number(rows[0].pid);
    let released = false;
    return {
      async waiting() {
        const waiting = await db.raw('SELECT query FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))', [pid]);
        return waiting.rows.map((row: { query: string }) => row.query);
      },
      async release() {
        if (released) return;
        released = true;
        await trx.rollback();
      },
    };
  } catch (error) {
    await trx.rollback();
    throw error;
  }
}
