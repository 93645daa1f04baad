import type { Knex } from 'knex';
import { FieldIndexes } from './field-indexes';
import type { OneStatementRead } from './reads';
import { TableStatistics } from './statistics';
import { CurrentCatalogs, PreparedStatements } from './storage';
import type { ManagedTarget } from './targets';

/**
 * What one runtime's managed tables keep between calls. The runtime builds it (scripts/runtime.ts,
 * workerDependencies) and the capability reaches it through its context (ctx.managedTables, from
 * ServiceDependencies.managedTables), on the runtime's pool, so two runtimes in one process share nothing, and a test that
 * changes storage behind Weft's back (drops a table, rewinds a catalog) builds its own rather than
 * clearing a module's.
 */
export class ManagedTableMemory {
  /** Targets already checked, by their JSON text (a few bytes): every read checks its endpoint's target. */
  readonly checkedTargets = new Map<string, ManagedTarget>();
  /**
   * Tables this runtime has seen stored (registered, so their storage exists), as `schema.table`: a
   * read of one is a single statement (readInOneStatement). Should one be gone since, the statement
   * fails on the missing table and the read takes the long way, which finds out.
   */
  readonly storedTables = new Set<string>();
  /**
   * The statements of plain reads (the latest snapshot, no filter, order or cursor: a page of a table
   * as it is now), per table and limit: their text and parameters depend on nothing else, so they
   * are built once, not on every read (select only shapes the page from the same rows).
   */
  readonly plainReads = new Map<string, OneStatementRead>();
  /** Workspace catalogs seen committed and current, so statements use them without a check. */
  readonly catalogs = new CurrentCatalogs();
  /** The names of the statements every read runs, prepared on each connection once. */
  readonly statements = new PreparedStatements();
  /** The GIN indexes built (or being built) on the fields SPARQL reads bound tables by. */
  readonly fieldIndexes = new FieldIndexes();
  /** The planner statistics refreshed after large commits, on `pool` (the runtime's). */
  readonly statistics: TableStatistics;

  constructor(pool: Knex) {
    this.statistics = new TableStatistics(pool);
  }

  /** Waits for the statistics refreshes under way (the runtime's close, before its pool is destroyed). */
  async settle(): Promise<void> {
    await this.statistics.settle();
  }
}
