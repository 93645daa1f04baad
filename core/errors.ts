/**
 * Transport-neutral business errors. Services throw these; the HTTP error middleware and the
 * MCP tool adapter each map them to their wire format. Services never throw HTTP statuses.
 */
export type ErrorKind =
  | 'bad_request'
  | 'unsupported_media_type'
  | 'not_acceptable'
  | 'payload_too_large'
  | 'invalid_input'
  | 'unauthenticated'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'gone'
  | 'payment_required'
  | 'rate_limited'
  | 'upstream_failed'
  | 'unavailable';

export interface FieldProblem {
  /** JSON Pointer into the request part that failed, e.g. "/scopes/0". */
  path: string;
  message: string;
}

export abstract class DomainError extends Error {
  abstract readonly kind: ErrorKind;
  constructor(
    /** Stable machine-readable code, e.g. "validation_failed". */
    readonly code: string,
    message: string,
    /** Extra structured information a client can act on (field problems, references, limits). */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** The request is syntactically unusable (unparseable JSON, wrong content type). */
export class BadRequestError extends DomainError {
  readonly kind = 'bad_request';
}

/** The request body is not in a format the operation reads. */
export class UnsupportedMediaTypeError extends DomainError {
  readonly kind = 'unsupported_media_type';
}

/** No representation the caller accepts (Accept header). */
export class NotAcceptableError extends DomainError {
  readonly kind = 'not_acceptable';
}

export class PayloadTooLargeError extends DomainError {
  readonly kind = 'payload_too_large';
}

/** The request parsed but its content breaks a rule. */
export class InputError extends DomainError {
  readonly kind = 'invalid_input';
  constructor(code: string, message: string, problems: FieldProblem[] = [], details?: Record<string, unknown>) {
    super(code, message, problems.length ? { ...details, errors: problems } : details);
  }
}

export class AuthenticationError extends DomainError {
  readonly kind = 'unauthenticated';
}

export class PermissionError extends DomainError {
  readonly kind = 'forbidden';
}

export class NotFoundError extends DomainError {
  readonly kind = 'not_found';
  constructor(resource: string, message = `${resource} not found`) {
    super('not_found', message, { resource });
  }
}

export class ConflictError extends DomainError {
  readonly kind = 'conflict';
}

export class GoneError extends DomainError {
  readonly kind = 'gone';
}

export class PaymentRequiredError extends DomainError {
  readonly kind = 'payment_required';
}

export class RateLimitError extends DomainError {
  readonly kind = 'rate_limited';
  constructor(
    message: string,
    readonly limit: { limit: number; remaining: number; resetSeconds: number; dimension: string },
  ) {
    super('rate_limited', message, { dimension: limit.dimension });
  }
}

/** A remote system a capability talks to failed or answered nonsense (HTTP 502): not Weft's own outage. */
export class UpstreamError extends DomainError {
  readonly kind = 'upstream_failed';
}

export class UnavailableError extends DomainError {
  readonly kind = 'unavailable';
}

/** A business error kept as data (code, kind, message, details) and raised again, e.g. when an idempotent request is replayed. */
export function restoredError(stored: { kind: string; code: string; message: string; details?: Record<string, unknown> }): DomainError {
  const kind = stored.kind as ErrorKind;
  return new (class RestoredError extends DomainError {
    readonly kind = kind;
  })(stored.code, stored.message, stored.details);
}
