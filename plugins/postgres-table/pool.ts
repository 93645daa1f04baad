import pg from 'pg';
import { InputError } from '../../core/errors';
import type { InstallationContext } from '../capability';

/** Connection settings of an installation (installationSchema), password from its credentials. */
export function connectionConfig(installation: InstallationContext): pg.PoolConfig {
  const { host, port, database, user, ssl } = installation.settings;
  if (typeof host !== 'string' || typeof database !== 'string' || typeof user !== 'string') {
    throw new InputError('invalid_installation', 'The postgres_table installation needs host, database and user.');
  }
  const password = installation.credentials.password;
  return {
    host,
    port: typeof port === 'number' ? port : 5432,
    database,
    user,
    password: typeof password === 'string' ? password : undefined,
    ssl: ssl === true ? { rejectUnauthorized: true } : false,
    // A few connections per installation: records reads are bounded, and the remote database is someone else's.
    max: 4,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: 10_000,
    statement_timeout: 60_000,
    application_name: 'weft',
    // Idle pooled connections must not keep a finished process (CLI, tests) alive.
    allowExitOnIdle: true,
  };
}

const pools = new Map<string, { fingerprint: string; pool: pg.Pool }>();

/** The cached pool of an installation; replaced when its connection settings change. */
export function poolFor(installation: InstallationContext): pg.Pool {
  const config = connectionConfig(installation);
  const fingerprint = JSON.stringify(config);
  const cached = pools.get(installation.id);
  if (cached?.fingerprint === fingerprint) return cached.pool;
  if (cached) void cached.pool.end().catch(() => undefined);
  const pool = new pg.Pool(config);
  // An idle connection dropped by the server must not crash the process; the next query reconnects.
  pool.on('error', () => undefined);
  pools.set(installation.id, { fingerprint, pool });
  return pool;
}

/** Closes every cached pool (tests, shutdown). */
export async function closePostgresTablePools(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map(({ pool }) => pool.end().catch(() => undefined)));
}
