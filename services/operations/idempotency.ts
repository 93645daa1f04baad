import { sha256Hex } from '../../core/secrets';
import type { Knex } from 'knex';
import { canonicalJson } from '../../core/json-shape';
import { ConflictError, InputError } from '../../core/errors';
import type { Principal } from '../tenancy/access';
import type { Reply } from './operation';

export const IDEMPOTENCY_TTL_HOURS = 24;
/** 8 to 200 visible ASCII characters: the check below and the OpenAPI header parameter share it. */
export const IDEMPOTENCY_KEY_SCHEMA = { type: 'string', minLength: 8, maxLength: 200, pattern: '^[\\x21-\\x7e]{8,200}$' } as const;
const KEY_PATTERN = new RegExp(IDEMPOTENCY_KEY_SCHEMA.pattern);

export function checkIdempotencyKey(value: string): string {
  if (!KEY_PATTERN.test(value)) {
    throw new InputError('invalid_idempotency_key', 'The Idempotency-Key header must be 8 to 200 visible ASCII characters.', [{ path: 'header:Idempotency-Key', message: 'must be 8 to 200 visible ASCII characters' }]);
  }
  return value;
}


export function requestFingerprint(route: string, params: unknown, body: unknown): string {
  return sha256Hex(canonicalJson({ route, params, body }));
}

/**
 * Runs `execute` at most once per (workspace, key, Idempotency-Key), inside the request's
 * transaction. The record is inserted first: a concurrent duplicate's INSERT waits on the unique
 * key until this transaction ends, then replays the stored answer. If the request fails, the
 * transaction rolls back and takes the record with it, so failures are never stored.
 */
export async function runIdempotently(
  trx: Knex.Transaction,
  principal: Principal,
  idempotencyKey: string,
  route: string,
  fingerprint: string,
  execute: () => Promise<Reply>,
): Promise<Reply & { replayed?: boolean }> {
  const identity = { workspaceId: principal.workspaceId, apiKeyId: principal.apiKeyId, idempotencyKey };
  // Bound the wait behind a slow duplicate; 55P03 maps to 409 concurrent_change.
  await trx.raw("SET LOCAL lock_timeout = '30s'");
  await trx('idempotency_records').where(identity).where('expiresAt', '<', trx.fn.now()).delete();
  const inserted = await trx('idempotency_records')
    .insert({ ...identity, route, requestHash: fingerprint, expiresAt: trx.raw(`now() + interval '${IDEMPOTENCY_TTL_HOURS} hours'`) })
    .onConflict(['workspaceId', 'apiKeyId', 'idempotencyKey'])
    .ignore()
    .returning('route');

  if (inserted.length === 0) {
    const stored = await trx('idempotency_records').where(identity).first();
    if (!stored || stored.route !== route || stored.requestHash !== fingerprint) {
      throw new InputError('idempotency_key_reused', 'This Idempotency-Key was already used for a different request. Use a new key for a new operation.');
    }
    if (stored.responseStatus === null) {
      throw new ConflictError('idempotency_request_in_progress', 'A request with this Idempotency-Key is still being processed. Retry shortly.');
    }
    // The exact text of the first answer (see below); records stored as JSON objects before that replay as they are.
    const body = typeof stored.responseBody === 'string' ? JSON.parse(stored.responseBody) : stored.responseBody;
    return { status: stored.responseStatus, body: body ?? undefined, replayed: true };
  }

  const result = await execute();
  await trx('idempotency_records').where(identity).update({
    responseStatus: result.status ?? 200,
    // Stored as a JSON string holding the answer's text: a jsonb object reorders keys, so replays
    // answered the same JSON in other bytes (and MCP replays another text) than the first answer.
    responseBody: result.body === undefined ? null : JSON.stringify(JSON.stringify(result.body)),
  });
  return result;
}
