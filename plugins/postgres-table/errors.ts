import { ConflictError, DomainError, InputError, NotFoundError, PermissionError, UpstreamError } from '../../core/errors';
import { scrubSecrets } from '../../core/secrets';

/** What an error message may name about the remote server. Never the password: it is only used to scrub. */
export interface RemoteInfo {
  host: string;
  port: number;
  database: string;
  user: string;
  password?: string;
  statementTimeoutMs: number;
}

/** Socket-level failures: the server cannot be reached at all. */
const networkCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);
/** SQLSTATEs meaning "the server is there but will not serve this connection now". */
const unavailableStates = new Set(['57P01', '57P02', '57P03', '53300']);
/** pg and pg-pool errors without a code that mean the connection was lost or never made. */
const connectionMessages = /^(timeout exceeded when trying to connect|Connection terminated|Connection terminated unexpectedly|Connection terminated due to connection timeout|timeout expired|Query read timeout|Client has encountered a connection error and is not queryable|Cannot use a pool after calling end on the pool|The server does not support SSL connections|There was an error establishing an SSL connection)$/;
/** TLS verification failures (OpenSSL codes). */
const tlsCodes = /^(ERR_TLS_|ERR_SSL_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_|CERT_|HOSTNAME_MISMATCH)/;

/** Removes the password wherever it might have been echoed (remote messages quote values and settings). */
export function scrub(text: string, info: Pick<RemoteInfo, 'password'>): string {
  const { password } = info;
  // Percent-encoded too: a server may quote it from a connection URL.
  return scrubSecrets(password ? text.split(password).join('***') : text, [password]);
}

/**
 * Maps a failure of a remote PostgreSQL call to a business error:
 *  - unreachable, refusing, shutting down, unknown database, failed login, statement timeout:
 *    UpstreamError('upstream_unavailable') (the installation or the server needs attention);
 *  - missing privilege (42501): PermissionError('upstream_permission_denied');
 *  - bad values, incomparable types, constraint violations, serialization failures: input and conflict errors.
 * Messages are built here from the code and the installation's host, port, database and role;
 * remote text that is passed on is scrubbed of the password. Other errors are returned as they are,
 * with the password cut out of every field.
 */
export function remoteError(error: unknown, info: RemoteInfo): unknown {
  if (error instanceof DomainError) return error;
  const { code: rawCode, message: rawMessage } = (error ?? {}) as { code?: unknown; message?: unknown };
  const code = typeof rawCode === 'string' ? rawCode : undefined;
  const original = typeof rawMessage === 'string' ? rawMessage : '';
  const message = scrub(original, info);
  const server = `PostgreSQL at ${info.host}:${info.port}`;
  const unavailable = (text: string, reason: string) => new UpstreamError('upstream_unavailable', text, { reason });

  if (code && networkCodes.has(code)) return unavailable(`Could not reach ${server} (${code}).`, code);
  if (code && tlsCodes.test(code)) return unavailable(`Could not establish a verified TLS connection to ${server} (${code}).`, code);
  if (code === '3D000') return unavailable(`${server} has no database "${info.database}".`, code);
  if (code === '28P01' || code === '28000') return unavailable(`${server} refused the login of role "${info.user}" to database "${info.database}" (${code}); check the installation's user and password.`, code);
  if (code === '57014') return unavailable(`${server} cancelled a statement: it ran longer than ${info.statementTimeoutMs} ms or was cancelled (57014).`, code);
  if (code?.startsWith('08') || (code && unavailableStates.has(code))) return unavailable(`${server} is not accepting connections or dropped the connection (${code}).`, code);
  if (!code && connectionMessages.test(original)) return unavailable(`Could not keep a connection to ${server} (${message.toLowerCase()}).`, 'connection_lost');
  if (code === '42501') {
    return new PermissionError('upstream_permission_denied', `The installation's role "${info.user}" lacks a privilege on ${server}: ${message}`, { reason: code });
  }
  if (code === '42P01') return new NotFoundError('table', `The table is not visible to the installation's role: ${message}`);
  if (code?.startsWith('22')) return new InputError('invalid_value', `PostgreSQL rejected a value: ${message}`);
  if (code === '42883') return new InputError('unsupported_comparison', `PostgreSQL cannot compare or order these values: ${message}`);
  if (code?.startsWith('23')) return new ConflictError('constraint_violation', `The write breaks a table constraint: ${message}`);
  if (code === '40001' || code === '40P01') return new ConflictError('write_conflict', `The write collided with another transaction; retry it (${code}).`);
  // Any other error goes on as it is (a 500 in the API, a retried activity in a run), and its text
  // reaches the logs, Temporal's failure and the run's error. A server or proxy may have echoed the
  // password in its message, detail or hint: cut it out of every field first.
  return scrubSecrets(error, [info.password]);
}

/** Whether an error (mapped or not) means the connection itself is unusable, so a pooled client must be discarded. */
export function isConnectionFailure(error: unknown): boolean {
  return error instanceof UpstreamError;
}
