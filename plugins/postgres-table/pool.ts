import { createHash } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import pg from 'pg';
import { systemClock, type Clock } from '../../core/clock';
import { InputError, PermissionError } from '../../core/errors';
import type { InstallationContext } from '../capability';
import { HostLookup, resolveAndVet } from '../network-policy';
import type { RemoteInfo } from './errors';

/** A statement running longer is cancelled by the server (57014, reported as upstream_unavailable). */
export const STATEMENT_TIMEOUT_MS = 60_000;
/** Establishing a connection (TCP, TLS and login) longer than this fails. */
export const CONNECTION_TIMEOUT_MS = 10_000;
/** How long a vetted address is trusted before the host is resolved and checked again. */
const REVET_AFTER_MS = 60_000;

/** The installation's connection settings (installationSchema) with the password from its credentials. */
export interface PostgresSettings {
  host: string;
  port: number;
  database: string;
  user: string;
  password?: string;
  ssl: boolean;
  allowPrivateNetwork: boolean;
}

export function settingsOf(installation: InstallationContext): PostgresSettings {
  const { host, port, database, user, ssl, allowPrivateNetwork } = installation.settings;
  if (typeof host !== 'string' || !host || typeof database !== 'string' || typeof user !== 'string') {
    throw new InputError('invalid_installation', 'The postgres_table installation needs host, database and user.');
  }
  const password = installation.credentials.password;
  return {
    host: host.replace(/^\[(.*)\]$/, '$1'),
    port: typeof port === 'number' ? port : 5432,
    database,
    user,
    password: typeof password === 'string' ? password : undefined,
    ssl: ssl === true,
    allowPrivateNetwork: allowPrivateNetwork === true,
  };
}

/** What error messages may say about the connection (the password only serves to scrub messages). */
export function remoteInfo(settings: PostgresSettings): RemoteInfo {
  const { host, port, database, user, password } = settings;
  return { host, port, database, user, password, statementTimeoutMs: STATEMENT_TIMEOUT_MS };
}

/**
 * Keeps int8 and numeric values as the exact decimal text PostgreSQL sends (pg's own default), per
 * pool: external data must not pass through a global parser that turns bigints into lossy numbers.
 * Dates too are kept as their text ('2026-12-03'): pg's parser makes a Date at the API process's
 * local midnight, so the day a record showed depended on the process's time zone.
 */
const INT8_OID = 20;
const NUMERIC_OID = 1700;
const DATE_OID = 1082;
const DATE_ARRAY_OID = 1182;
const TEXT_ARRAY_OID: number = 1009;
const keepText = (value: string) => value;
export const externalTypes: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (format === 'binary') return pg.types.getTypeParser(oid, format);
    if (oid === INT8_OID || oid === NUMERIC_OID || oid === DATE_OID) return keepText;
    if (oid === DATE_ARRAY_OID) return pg.types.getTypeParser(TEXT_ARRAY_OID, 'text');
    return pg.types.getTypeParser(oid, format);
  }) as pg.CustomTypesConfig['getTypeParser'],
};

export interface VetOptions {
  /** Resolves a host name to all its addresses (tests simulate DNS answers). */
  lookup?: HostLookup;
  /** Weft's own database, never a target; defaults to process.env.DATABASE_URL. */
  weftDatabaseUrl?: string;
}

/** The addresses of this machine: connecting to any of them reaches the same servers as loopback. */
function localAddresses(): Set<string> {
  const all = Object.values(networkInterfaces()).flatMap((entries) => entries ?? []);
  return new Set(all.map((entry) => entry.address.replace(/%.*$/, '')).filter((address) => ipaddr.isValid(address)).map((address) => ipaddr.process(address).toNormalizedString()));
}

/** One name per server an address reaches: every loopback, unspecified and own-interface address is "this machine". */
function serverOf(address: string, local: Set<string>): string {
  const parsed = ipaddr.process(address);
  const range = parsed.range();
  const normal = parsed.toNormalizedString();
  return range === 'loopback' || range === 'unspecified' || local.has(normal) ? 'local' : normal;
}

/** Host, port and database of Weft's own PostgreSQL, from its connection URL (as pg reads it). */
function weftDatabase(url: string): { host: string; port: number; database: string } | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  const host = parsed.searchParams.get('host') || decodeURIComponent(parsed.hostname).replace(/^\[(.*)\]$/, '$1') || 'localhost';
  const port = Number(parsed.searchParams.get('port') || parsed.port || 5432);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || decodeURIComponent(parsed.username);
  return { host, port, database };
}

async function isWeftDatabase(settings: PostgresSettings, addresses: string[], url: string, lookup?: HostLookup): Promise<boolean> {
  const weft = weftDatabase(url);
  if (!weft || weft.port !== settings.port || weft.database !== settings.database) return false;
  if (weft.host.toLowerCase() === settings.host.toLowerCase()) return true;
  // A Unix socket directory is this machine.
  const weftAddresses = weft.host.startsWith('/') ? ['127.0.0.1'] : await resolveAndVet(weft.host, { allowPrivateNetwork: true, lookup }).catch(() => [] as string[]);
  const local = localAddresses();
  const weftServers = new Set(weftAddresses.map((address) => serverOf(address, local)));
  return addresses.some((address) => weftServers.has(serverOf(address, local)));
}

/**
 * Resolves the installation's host once and checks where it leads, before any connection: every
 * address must be public unless the installation allows private networks, and Weft's own database
 * (same server, port and database as DATABASE_URL) is refused whatever the installation allows.
 * Returns the address to connect to, so the connection reaches exactly what was checked.
 */
export async function vetAddress(settings: PostgresSettings, options: VetOptions = {}): Promise<string> {
  const { lookup, weftDatabaseUrl: weftUrl = process.env.DATABASE_URL } = options;
  const addresses = await resolveAndVet(settings.host, { allowPrivateNetwork: settings.allowPrivateNetwork, lookup });
  if (weftUrl && (await isWeftDatabase(settings, addresses, weftUrl, lookup))) {
    throw new PermissionError('address_refused', `${settings.host}:${settings.port} database "${settings.database}" is Weft's own database; installations cannot connect to it.`, { host: settings.host });
  }
  return addresses[0];
}

/** The pool configuration for a vetted address: pg connects to the address, TLS verifies the host name. */
export function connectionConfig(settings: PostgresSettings, address: string): pg.PoolConfig {
  const named = !ipaddr.isValid(settings.host);
  return {
    host: address,
    port: settings.port,
    database: settings.database,
    user: settings.user,
    password: settings.password,
    // pg sets SNI only for host names; the socket goes to the address, so the name is given here.
    ssl: settings.ssl ? { rejectUnauthorized: true, ...(named ? { servername: settings.host } : {}) } : false,
    types: externalTypes,
    // A few connections per installation: records reads are bounded, and the remote database is someone else's.
    max: 4,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: CONNECTION_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    idle_in_transaction_session_timeout: STATEMENT_TIMEOUT_MS,
    application_name: 'weft',
    // Idle pooled connections must not keep a finished process (CLI, tests) alive.
    allowExitOnIdle: true,
  };
}

interface CachedPool {
  /** Hash of the settings (password included), so changed settings get a new pool. */
  settingsKey: string;
  address: string;
  vettedAt: number;
  pool: pg.Pool;
}

function retire(pool: pg.Pool): void {
  void pool.end().catch(() => undefined);
}

/**
 * One runtime's pools of postgres_table installations, by installation id. The runtime builds it
 * (runtimeState: ServiceDependencies.postgresTablePools) and closes it with its state; the capability
 * reaches it through its context (ctx.postgresTablePools), so two runtimes in one process share no
 * connection. When to vet an address again is decided by the runtime's clock.
 */
export class PostgresTablePools {
  private readonly pools = new Map<string, CachedPool>();

  constructor(private readonly clock: Clock = systemClock) {}

  /**
   * The cached pool of an installation, connected to its vetted address. The host is resolved and
   * checked again after a minute; a pool is replaced when the settings or the address change.
   */
  async poolFor(installation: InstallationContext, options: VetOptions = {}): Promise<pg.Pool> {
    const settings = settingsOf(installation);
    const settingsKey = createHash('sha256').update(JSON.stringify(settings)).digest('base64url');
    const cached = this.pools.get(installation.id);
    if (cached?.settingsKey === settingsKey && this.clock.now() - cached.vettedAt < REVET_AFTER_MS) return cached.pool;
    const address = await vetAddress(settings, options);
    // Another call may have replaced the pool while this one resolved.
    const current = this.pools.get(installation.id);
    if (current?.settingsKey === settingsKey && current.address === address) {
      current.vettedAt = this.clock.now();
      return current.pool;
    }
    if (current) retire(current.pool);
    const pool = new pg.Pool(connectionConfig(settings, address));
    // An idle connection dropped by the server must not crash the process; the next query reconnects.
    pool.on('error', () => undefined);
    this.pools.set(installation.id, { settingsKey, address, vettedAt: this.clock.now(), pool });
    return pool;
  }

  /** Whether this runtime holds a pool of the installation. */
  holds(installationId: string): boolean {
    return this.pools.has(installationId);
  }

  /** Closes every pool held (the runtime's shutdown, tests); later calls open new ones. Safe to call any number of times, also concurrently. */
  async close(): Promise<void> {
    const all = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(all.map(({ pool }) => pool.end().catch(() => undefined)));
  }
}
