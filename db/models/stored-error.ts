import type { DomainError } from '../../core/errors';

/** A business error as an action keeps it, so a replay answers with the same error. */
export interface StoredError {
  kind: string;
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** The form a business error is kept in, on an action, a job or a log entry; restoredError turns it back. */
export const storedError = (error: DomainError): StoredError => ({ kind: error.kind, code: error.code, message: error.message, details: error.details });
