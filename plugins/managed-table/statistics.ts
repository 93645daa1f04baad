import type { Knex } from 'knex';
import { afterCommit } from '../../db/after-commit';
import { logger } from '../../core/logger';
import { SqlParams } from '../sql/builder';
import { qualified, run } from './storage';

// Planner statistics of managed tables, fresh after a commit that changed a large share of a table.
//
// Autovacuum analyses a table once its changes pass autovacuum_analyze_threshold +
// autovacuum_analyze_scale_factor × its rows, but only when a worker next gets to it (every
// autovacuum_naptime, a minute by default, behind other tables' work). Until then the planner
// plans with the table as it was: after a bulk commit of 100,000 records into a new table it
// estimated 897 rows, and SPARQL's SQL reads of it were planned as for a tiny table. So a commit
// past that same threshold is followed by an ANALYZE of its table, at once; smaller commits leave
// it to autovacuum, which counts them up (ingest pays nothing for them). Per-table autovacuum
// settings at creation were not chosen: they change how much autovacuum waits for, not when it
// comes, so they cannot make statistics fresh at commit, and a lower scale factor would have
// large versioned tables analysed over and over for small commits.
//
// The ANALYZE runs after the commit, on the runtime's pool, never in the commit's transaction:
// the commit neither waits for it nor fails with it (a failure is logged). A commit's caller does
// not wait either: sampling a large table takes a few hundred milliseconds. It is idempotent, so
// a retried commit (which writes nothing again) needs none; a runtime stopped before it ran
// leaves the table to autovacuum. It waits at most 5 s for its lock: an autovacuum of the table
// gives way to it (PostgreSQL cancels autovacuum for a conflicting lock), an index build
// (field-indexes.ts, which analyses after it) or another ANALYZE may not, and is left to finish.

/** autovacuum_analyze_threshold's default: commits of at most this many records never cost a statement. */
const FEWEST_CHANGED = 50;

/** The statistics refreshes of one runtime (ManagedTableMemory), one at a time, in commit order. */
export class TableStatistics {
  /** Refreshes run one after another: an ANALYZE reads a sample of up to 30,000 rows, and commits can come in bursts. */
  private queue: Promise<void> = Promise.resolve();
  /** Records changed by commits whose table waits in the queue, by qualified name: later commits add to the waiting refresh. */
  private readonly waiting = new Map<string, number>();

  constructor(private readonly pool: Knex) {}

  /** After `db`'s commit (at once outside a transaction), refreshes the table's statistics if `changed` records are a large share of it. */
  afterCommit(db: Knex, schema: string, table: string, changed: number): void {
    if (changed <= FEWEST_CHANGED) return;
    // Not returned to afterCommit, so a write's caller (committing()) does not wait for the ANALYZE.
    afterCommit(db, () => this.enqueue(schema, table, changed));
  }

  private enqueue(schema: string, table: string, changed: number): void {
    const name = qualified(schema, table);
    const waiting = this.waiting.get(name);
    this.waiting.set(name, (waiting ?? 0) + changed);
    if (waiting !== undefined) return;
    this.queue = this.queue.then(async () => {
      const total = this.waiting.get(name)!;
      this.waiting.delete(name);
      try {
        await this.refresh(name, total);
      } catch (error) {
        logger.warn({ err: error, table: name }, 'managed table statistics not refreshed; autovacuum will');
      }
    });
  }

  /** ANALYZE when the changes pass autovacuum's own threshold for the table as PostgreSQL last counted it (never: no rows). */
  private async refresh(name: string, changed: number): Promise<void> {
    const params = new SqlParams();
    const { rows } = await run<{ due: boolean | null }>(
      this.pool,
      `SELECT ${params.add(changed)}::float8 > current_setting('autovacuum_analyze_threshold')::float8
                + current_setting('autovacuum_analyze_scale_factor')::float8 * greatest(c.reltuples, 0) AS due
         FROM pg_class c WHERE c.oid = to_regclass(${params.add(name)})`,
      params,
    );
    // A table dropped since its commit has nothing to analyse.
    if (!rows[0]?.due) return;
    await this.pool.transaction(async (trx) => {
      await trx.raw(`SET LOCAL lock_timeout = '5s'`);
      await trx.raw(`ANALYZE ${name}`);
    });
  }

  /** Waits for the refreshes queued so far, and those they queue (the runtime's close, before its pool is destroyed). */
  async settle(): Promise<void> {
    let settled: Promise<void>;
    do {
      settled = this.queue;
      await settled;
    } while (settled !== this.queue);
  }
}
