import type { Knex } from 'knex';
import type { Executor } from './connection';
import { logger } from '../core/logger';

/**
 * Work that must wait until a transaction has committed: starting a workflow that reads the rows
 * the transaction wrote (a run's workflow claims its run row), counting a metric once, telling this
 * process of a committed snapshot. A rolled-back transaction runs none of it.
 *
 * A savepoint (a transaction opened on a transaction) is not a commit: knex resolves its
 * executionPromise at RELEASE SAVEPOINT, while the enclosing transaction may still roll back. So
 * work queued in a savepoint passes to the enclosing transaction when the savepoint is released
 * (and is dropped when it rolls back), up to the outermost transaction, and runs once that commits.
 */
type Work = () => void | Promise<void>;

/** The queues of the transactions committing() opened: it runs them, awaited, after their commit. */
const queues = new WeakMap<Knex.Transaction, Work[]>();

/** Runs the work, logging a failure: the commit has happened and nobody can undo it. */
async function runLogged(work: Work): Promise<void> {
  try {
    await work();
  } catch (error) {
    logger.error({ err: error }, 'work after a commit failed');
  }
}

/**
 * Schedules `work` for after the commit of the executor's outermost transaction, or runs it at once
 * outside a transaction. The caller does not wait for it and its failures are logged; only inside
 * a transaction of committing() (every write of invoke) does invoke wait for it before it answers.
 */
export function afterCommit(db: Executor, work: Work): void {
  if (!db.isTransaction) {
    void runLogged(work);
    return;
  }
  const trx = db as Knex.Transaction;
  const queue = queues.get(trx);
  if (queue) {
    queue.push(work);
    return;
  }
  const enclosing = trx.parentTransaction;
  void trx.executionPromise.then(
    () => (enclosing ? afterCommit(enclosing, work) : runLogged(work)),
    () => undefined,
  );
}

/**
 * invoke(): runs `work` in a transaction and, once it committed, the work it left for after its
 * commit, before returning. On a transaction (the apply activity of governed writes passes its own)
 * it is a savepoint, and that work waits for the outermost transaction's commit instead.
 */
export async function committing<T>(db: Executor, work: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
  if (db.isTransaction) return db.transaction(work);
  const queue: Work[] = [];
  const result = await db.transaction((trx) => {
    queues.set(trx, queue);
    return work(trx);
  });
  for (const next of queue) await runLogged(next);
  return result;
}
