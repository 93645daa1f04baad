/**
 * A records cursor for the records bench, sealed the way services/endpoints/records-read.ts seals the ones it
 * issues (AES-GCM under a key derived from WEFT_ENCRYPTION_KEY, bound to the API key, the endpoint
 * and a fingerprint of the read parameters and the endpoint's target). It lets the bench start
 * reading deep in a large table without paging there first; every later cursor is Weft's own. If
 * the service's format changes, Weft refuses this cursor (invalid_cursor) and the bench stops.
 */
import { createHash, createHmac } from 'node:crypto';
import { encryptSecret } from '../../core/secrets';
import { requireDataEndpoint } from '../../services/endpoints/data-endpoints';
import type { BenchWeft } from './weft';

export interface MintCursorInput {
  apiKeyId: string;
  endpointId: string;
  where: unknown[];
  orderBy: Array<{ field: string; direction: 'asc' | 'desc' }>;
  limit: number;
  /** The capability's continuation (for managed_table: {order, key, version}). */
  after: unknown;
}

export async function mintRecordsCursor(weft: Pick<BenchWeft, 'db' | 'encryptionKey' | 'definitions' | 'tenant'>, input: MintCursorInput): Promise<string> {
  const { endpoint } = await requireDataEndpoint(weft, weft.db, weft.tenant.workspaceId, input.endpointId);
  const params = createHash('sha256')
    .update(JSON.stringify({ select: undefined, where: input.where, orderBy: input.orderBy, limit: input.limit, snapshotId: undefined, asOf: undefined, target: endpoint.target }))
    .digest('base64url');
  const key = createHmac('sha256', weft.encryptionKey).update('weft records cursor v1').digest();
  const payload = { v: 1, key: input.apiKeyId, endpoint: input.endpointId, params, after: input.after };
  return Buffer.from(encryptSecret(JSON.stringify(payload), key)).toString('base64url');
}
