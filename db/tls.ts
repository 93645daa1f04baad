// TLS to Weft's own PostgreSQL. DATABASE_URL reaches pg whole, and pg-connection-string reads its
// sslmode, sslrootcert, sslcert and sslkey (the CA and key files are read at connect). libpq
// also takes those settings from PGSSLMODE, PGSSLROOTCERT, PGSSLCERT and PGSSLKEY, as psql does;
// pg reads only PGSSLMODE, and drops it as soon as the URL names any ssl parameter. So Weft
// writes the libpq variables into the URL, where the URL does not set them: every connection to
// its database (the pool, LISTEN, the throwaway databases of a test run) then has the same TLS.

const FROM_ENVIRONMENT = [
  ['sslrootcert', 'PGSSLROOTCERT'],
  ['sslcert', 'PGSSLCERT'],
  ['sslkey', 'PGSSLKEY'],
] as const;

/** Modes that ask for no TLS, or that libpq would fall back from (pg has no such fallback). */
const WITHOUT_TLS = ['disable', 'allow'];

/** A database URL's query parameters. Only the query is read: a socket URL (postgres://user@/db?host=/run/postgresql) is no WHATWG URL. */
function queryOf(databaseUrl: string): URLSearchParams {
  const query = databaseUrl.indexOf('?');
  return new URLSearchParams(query < 0 ? '' : databaseUrl.slice(query + 1).split('#')[0]);
}

/** `databaseUrl` with the PGSSL* settings of `env` added where it sets none; unchanged without TLS. */
export function withTlsEnvironment(databaseUrl: string, env: NodeJS.ProcessEnv = process.env): string {
  const given = queryOf(databaseUrl);
  const mode = given.get('sslmode') ?? env.PGSSLMODE;
  if (!mode || WITHOUT_TLS.includes(mode)) return databaseUrl;
  const added = new URLSearchParams();
  if (!given.has('sslmode')) added.set('sslmode', mode);
  for (const [parameter, variable] of FROM_ENVIRONMENT) {
    const value = env[variable];
    if (value && !given.has(parameter)) added.set(parameter, value);
  }
  if (![...added.keys()].length) return databaseUrl;
  // Appended, not re-serialized: the rest of the URL (an encoded password) stays as written.
  return `${databaseUrl}${databaseUrl.includes('?') ? '&' : '?'}${added.toString()}`;
}

/** Whether `file` is one of the TLS files the database URL (as filled in) or the PGSSL* variables name. */
function namesTlsFile(file: string, databaseUrl: string | undefined): boolean {
  if (FROM_ENVIRONMENT.some(([, variable]) => process.env[variable] === file)) return true;
  if (!databaseUrl) return false;
  const given = queryOf(databaseUrl);
  return FROM_ENVIRONMENT.some(([parameter]) => given.get(parameter) === file);
}

/** Node's codes for a server certificate it does not accept. */
const CERTIFICATE_REFUSALS = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_UNTRUSTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

export class DatabaseTlsError extends Error {}

/**
 * A failed connection to Weft's database explained when TLS is why: Node's bare "self-signed
 * certificate in certificate chain" does not say which setting to look at. Undefined otherwise.
 */
export function databaseTlsError(error: unknown, databaseUrl?: string): DatabaseTlsError | undefined {
  const { code, message } = (error ?? {}) as { code?: string; message?: string };
  // pg reads the files the URL names when it connects; a bare ENOENT does not say which setting
  // named it. (knex passes the error on with its message, not always its path.)
  const file = /^ENOENT: no such file or directory, open '(.+)'$/.exec(message ?? '')?.[1];
  if (file && namesTlsFile(file, databaseUrl)) {
    return new DatabaseTlsError(`The TLS file ${file} does not exist: sslrootcert, sslcert or sslkey in DATABASE_URL (or PGSSLROOTCERT, PGSSLCERT, PGSSLKEY) names it.`, { cause: error });
  }
  if (code && CERTIFICATE_REFUSALS.has(code)) {
    return new DatabaseTlsError(
      `PostgreSQL's TLS certificate was refused (${code}: ${message}). sslrootcert in DATABASE_URL (or PGSSLROOTCERT) must name the CA ` +
        'that signed the server certificate, and with sslmode=verify-full the host in DATABASE_URL must be one the certificate names.',
      { cause: error },
    );
  }
  if (message?.includes('does not support SSL')) {
    return new DatabaseTlsError(`${message}: DATABASE_URL (or PGSSLMODE) asks for TLS. Turn ssl on at the server, or set sslmode=disable.`, { cause: error });
  }
  return undefined;
}
