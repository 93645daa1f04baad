import type { Knex } from 'knex';
import type { Executor } from '../../db/connection';
import { logger } from '../../core/logger';

/**
 * Work that must wait until an operation's transaction has committed: starting a workflow that
 * reads the rows the transaction wrote (a run's workflow claims its run row). invoke() runs the
 * transaction's work after the commit and before it answers, so the answer still follows it; a
 * rolled-back transaction runs none. Outside a transaction the work runs at once.
 */
const pending = new WeakMap<Knex.Transaction, Array<() => Promise<void>>>();

export async function afterCommit(db: Executor, work: () => Promise<void>): Promise<void> {
  if (!db.isTransaction) return work();
  const trx = db as Knex.Transaction;
  const queue = pending.get(trx);
  if (queue) {
    queue.push(work);
    return;
  }
  // A transaction invoke() did not open: nobody awaits it, so failures are logged here.
  void trx.executionPromise.then(
    () => work().catch((error: unknown) => logger.error({ err: error }, 'work after a commit failed')),
    () => undefined,
  );
}

/** invoke(): collects the transaction's after-commit work while it runs, then runs it once it committed. */
export async function committing<T>(db: Knex, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  const queue: Array<() => Promise<void>> = [];
  const result = await db.transaction((trx) => {
    pending.set(trx, queue);
    return work(trx);
  });
  for (const next of queue) await next();
  return result;
}
