/**
 * The ingest bench's records, generated deterministically from their id (no seed, no state), so
 * the paginated API, the COPY peer and any check produce byte-for-byte the same data: about 110
 * bytes of JSON each.
 *
 *   {"id":42,"name":"customer 000042","amount":3326.18,"status":"shipped","updated_at":"2024-01-01T00:00:42.000Z"}
 */
export interface IngestRecord {
  id: number;
  name: string;
  amount: number;
  status: string;
  updated_at: string;
}

const STATUSES = ['open', 'paid', 'shipped', 'refunded'];
const EPOCH = Date.UTC(2024, 0, 1);

export function ingestRecord(id: number): IngestRecord {
  return {
    id,
    name: `customer ${String(id).padStart(6, '0')}`,
    // Cents from a multiplicative hash of the id: spread, repeatable, two decimals at most.
    amount: ((id * 7919) % 1_000_000) / 100,
    status: STATUSES[id % STATUSES.length],
    updated_at: new Date(EPOCH + id * 1000).toISOString(),
  };
}

/** Records `from`..`to` (inclusive) as the JSON text of an array, built without an intermediate object graph. */
export function recordsJson(from: number, to: number): string {
  const parts: string[] = [];
  for (let id = from; id <= to; id++) {
    const r = ingestRecord(id);
    parts.push(`{"id":${r.id},"name":"${r.name}","amount":${r.amount},"status":"${r.status}","updated_at":"${r.updated_at}"}`);
  }
  return `[${parts.join(',')}]`;
}

/** The opaque cursor of the page after record `lastId`, and back. */
export const encodeCursor = (lastId: number): string => Buffer.from(`after:${lastId}`).toString('base64url');
export function decodeCursor(cursor: string): number | undefined {
  const match = /^after:(\d+)$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  return match ? Number(match[1]) : undefined;
}
