import type { Db } from '../../db/connection';

/** Idempotency records are kept 24 hours; expired ones are swept hourly by each API process. */
export async function cleanExpiredIdempotencyRecords(db: Db): Promise<number> {
  return db('idempotency_records').where('expiresAt', '<', db.fn.now()).delete();
}
