import { ConflictError, DomainError, InputError, UnavailableError } from '../../core/errors';

interface DatabaseErrorLike {
  code?: string;
  constraint?: string;
  column?: string;
  name?: string;
  message?: string;
}

/**
 * The database is away (restarting, failing over, out of connections): not a bug of ours and not
 * the caller's mistake, so an error the caller (or an activity's retry) can retry.
 */
function databaseUnavailable(error: DatabaseErrorLike): boolean {
  if (['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', '57P01', '57P02', '57P03', '53300'].includes(error.code ?? '')) return true;
  if (error.code?.startsWith('08')) return true;
  if (error.name === 'KnexTimeoutError') return true;
  return /Connection terminated|connection (?:is )?closed|Client has encountered a connection error/i.test(error.message ?? '');
}

/** SQLSTATEs of a transaction that lost a race and would succeed if run again. */
export const SERIALIZATION_FAILURES: ReadonlySet<string> = new Set(['40001', '40P01', '55P03']);

/**
 * PostgreSQL errors that mean the request was wrong, or raced another, as business errors: every
 * door (HTTP, MCP, activities) answers them alike. Anything else is a bug and stays unmapped.
 */
export function domainErrorFromDatabase(thrown: unknown): DomainError | undefined {
  if (thrown instanceof DomainError) return thrown;
  // Objection wraps driver errors (UniqueViolationError…): the SQLSTATE is on the native error.
  const error = ((thrown as { nativeError?: unknown })?.nativeError ?? thrown) as DatabaseErrorLike | undefined;
  if (!error || typeof error !== 'object') return undefined;
  if (databaseUnavailable(error)) {
    return new UnavailableError('database_unavailable', 'The database is briefly unavailable. Retry in a few seconds.', { retryAfterSeconds: 5 });
  }
  if (SERIALIZATION_FAILURES.has(error.code ?? '')) {
    return new ConflictError('concurrent_change', 'Another request changed the same resource at the same time. Retry the request.');
  }
  switch (error.code) {
    case '23505':
      return new ConflictError('already_exists', 'A resource with the same unique value already exists.', error.constraint ? { constraint: error.constraint } : undefined);
    case '23503':
      return new ConflictError('reference_conflict', 'The change refers to a resource that does not exist, or removes one that others still refer to.');
    case '23502':
      return new InputError('missing_field', `A required value is missing${error.column ? `: ${error.column}` : ''}.`);
    case '23514':
      return new InputError('invalid_value', 'A value breaks a rule of the stored resource.');
    default:
      // Class 22 (data exception): a value the database cannot take — malformed, out of range, a NUL character.
      return error.code?.startsWith('22') ? new InputError('invalid_value', 'A value has the wrong form or is out of range.') : undefined;
  }
}
