import type { Db } from '../db/connection';
import { observePool } from './metrics';
import { traceQueries } from './tracing';

/** A Weft database in the pool gauges and, while tracing is on, in the traces (a span per statement). */
export function observeDatabase(db: Db): void {
  observePool(db);
  traceQueries(db);
}
