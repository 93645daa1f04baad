import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { dataDir } from './paths';
import { temporalAddress, temporalSettings } from './temporal-config';

/** Runtime configuration, read from the environment with defaults that suit a laptop. */
export interface WeftConfig {
  host: string;
  port: number;
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  taskQueue: string;
  /** 32-byte key for credentials stored at rest. */
  encryptionKey: Buffer;
}

function requireEnvUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url) {
    throw new Error('DATABASE_URL is not set. Start Weft with `npm start` (which runs a local PostgreSQL) or set DATABASE_URL.');
  }
  return url;
}

/**
 * WEFT_ENCRYPTION_KEY (base64, 32 bytes) when set; otherwise a key generated once into the data
 * folder, so a laptop install works without setup and keeps decrypting what it stored.
 */
export function loadEncryptionKey(): Buffer {
  const fromEnv = process.env.WEFT_ENCRYPTION_KEY;
  if (fromEnv) {
    const key = Buffer.from(fromEnv, 'base64');
    if (key.length !== 32) throw new Error('WEFT_ENCRYPTION_KEY must be 32 bytes, base64-encoded.');
    return key;
  }
  const file = path.join(dataDir(), 'encryption.key');
  if (!existsSync(file)) {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600, flag: 'wx' });
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'base64');
}

/**
 * Whether a plan's included credit pauses new paid work: `plan` does (hosted Weft, where the team
 * plan is a checkout away), `none` does not (usage is still metered and shown, nothing pauses).
 * WEFT_CREDIT_LIMIT sets it for the installation; without it, an installation with Stripe
 * (STRIPE_SECRET_KEY) limits and one without does not, since it offers no way to pay. Read on
 * every check (a workspace may set its own: services/usage/plans.ts); config() refuses a bad value
 * at start.
 */
export const CREDIT_LIMITS = ['plan', 'none'] as const;
export type CreditLimit = (typeof CREDIT_LIMITS)[number];

export function installationCreditLimit(): CreditLimit {
  const setting = process.env.WEFT_CREDIT_LIMIT?.trim();
  if (!setting) return process.env.STRIPE_SECRET_KEY ? 'plan' : 'none';
  if (!(CREDIT_LIMITS as readonly string[]).includes(setting)) throw new Error(`WEFT_CREDIT_LIMIT must be one of ${CREDIT_LIMITS.join(', ')}; got "${setting}".`);
  return setting as CreditLimit;
}

/**
 * The largest charge lease a process takes for one workspace and kind, in the plan's currency
 * (WEFT_CHARGE_LEASE_MAX, default 0.10; 0 turns leases off, so every charge made outside a
 * transaction is committed before its request answers): services/usage/charge-leases.ts. It bounds
 * what a crashed process's lease bills beyond the charges it answered. Read on every decision;
 * config() refuses a bad value at start.
 */
export function chargeLeaseMax(): string {
  const setting = process.env.WEFT_CHARGE_LEASE_MAX?.trim() || '0.10';
  if (!/^\d{1,6}(\.\d{1,10})?$/.test(setting)) throw new Error(`WEFT_CHARGE_LEASE_MAX must be a non-negative decimal amount such as 0.10 (0 turns charge leases off); got "${setting}".`);
  return setting;
}

/**
 * How long a process keeps a charge lease nobody uses before handing it back (WEFT_LEASE_IDLE_MS,
 * default 10000; request leases keep at most 2 s of it, request-budgets.ts). Longer spares a client
 * that pauses between bursts the round trips of leasing again (the first charges of its next burst
 * would each be committed before their answers); shorter hands unused budget back sooner. Read on
 * every sweep; config() refuses a bad value at start.
 */
export function leaseIdleMs(): number {
  return millisecondsSetting('WEFT_LEASE_IDLE_MS', 10_000, 100, 60_000);
}

/**
 * How long a workflow's next task waits for the worker that ran its previous one, which holds its
 * state cached (Temporal's sticky queue), before any worker takes it: after a worker dies, the
 * runs it was running go on elsewhere after this (WEFT_WORKER_STICKY_TIMEOUT_MS; the SDK's 10 s by
 * default). Shorter resumes sooner after a crash; a live worker too busy to take its task within it
 * loses the cached state, and another worker replays the history instead.
 */
export function workerStickyTimeoutMs(): number {
  return millisecondsSetting('WEFT_WORKER_STICKY_TIMEOUT_MS', 10_000, 1000, 600_000);
}

/**
 * A run's heartbeat timeouts where an operator set them (WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS,
 * WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS): they travel in the run's workflow input, and the workflow keeps
 * its defaults (15 s, 30 s) for those unset. Read at each launch; config() refuses a bad value at start.
 */
export function runHeartbeatTimeoutSettings(): { extractHeartbeatTimeoutMs?: number; commitHeartbeatTimeoutMs?: number } {
  const set = (name: string) => (process.env[name]?.trim() ? millisecondsSetting(name, 0, 1000, 3_600_000) : undefined);
  const extractHeartbeatTimeoutMs = set('WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS');
  const commitHeartbeatTimeoutMs = set('WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS');
  return { ...(extractHeartbeatTimeoutMs ? { extractHeartbeatTimeoutMs } : {}), ...(commitHeartbeatTimeoutMs ? { commitHeartbeatTimeoutMs } : {}) };
}

/**
 * The file a test's clock shares its held time through (WEFT_TEST_CLOCK_FILE), for the API and
 * worker processes it starts; undefined (the system clock) unless set. Refused in production.
 */
export function testClockFile(): string | undefined {
  const file = process.env.WEFT_TEST_CLOCK_FILE?.trim() || undefined;
  if (file && process.env.NODE_ENV === 'production') throw new Error('WEFT_TEST_CLOCK_FILE is for tests: it cannot be set with NODE_ENV=production.');
  return file;
}

/** A whole number of milliseconds from `min` to `max` in the environment variable `name`, `fallback` when unset. */
function millisecondsSetting(name: string, fallback: number, min: number, max: number): number {
  const setting = process.env[name]?.trim() || String(fallback);
  const ms = Number(setting);
  if (!/^\d+$/.test(setting) || ms < min || ms > max) throw new Error(`${name} must be a whole number of milliseconds from ${min} to ${max}; got "${setting}".`);
  return ms;
}

/** The console's OpenID Connect sign-in: the provider's issuer and this installation's client at it. */
export interface OidcSettings {
  issuer: URL;
  clientId: string;
  clientSecret: string;
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The console's single sign-on (WEFT_OIDC_ISSUER, WEFT_OIDC_CLIENT_ID, WEFT_OIDC_CLIENT_SECRET):
 * all three, or none (the console then signs in with passwords only). The issuer is an https URL,
 * or http on a loopback host (a provider on the same machine); tokens cross no network in clear
 * otherwise. Read on every sign-in; config() refuses a partial or bad setting at start. The error
 * names the variables, never the secret's value.
 */
export function oidcSettings(): OidcSettings | undefined {
  const issuer = process.env.WEFT_OIDC_ISSUER?.trim() ?? '';
  const clientId = process.env.WEFT_OIDC_CLIENT_ID?.trim() ?? '';
  const clientSecret = process.env.WEFT_OIDC_CLIENT_SECRET ?? '';
  if (!issuer && !clientId && !clientSecret) return undefined;
  if (!issuer || !clientId || !clientSecret) {
    throw new Error('Single sign-on needs WEFT_OIDC_ISSUER, WEFT_OIDC_CLIENT_ID and WEFT_OIDC_CLIENT_SECRET together; set all three or none.');
  }
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new Error(`WEFT_OIDC_ISSUER must be the provider's issuer URL; got "${issuer}".`);
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname))) {
    throw new Error(`WEFT_OIDC_ISSUER must be an https URL (http only on localhost); got "${issuer}".`);
  }
  return { issuer: url, clientId, clientSecret };
}

let cached: WeftConfig | undefined;

export function config(): WeftConfig {
  if (!cached) {
    const port = Number(process.env.PORT ?? 8080);
    if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`PORT must be a TCP port, got "${process.env.PORT}".`);
    installationCreditLimit();
    chargeLeaseMax();
    leaseIdleMs();
    workerStickyTimeoutMs();
    runHeartbeatTimeoutSettings();
    testClockFile();
    oidcSettings();
    cached = {
      host: process.env.HOST ?? '127.0.0.1',
      port,
      databaseUrl: requireEnvUrl(),
      temporalAddress: temporalAddress(),
      temporalNamespace: temporalSettings().namespace,
      taskQueue: temporalSettings().taskQueues.main,
      encryptionKey: loadEncryptionKey(),
    };
  }
  return cached;
}

/** Where people reach this installation (WEFT_PUBLIC_URL, without a trailing slash): links Weft hands out, and the console's own origin. */
export function publicUrl(): string {
  return (process.env.WEFT_PUBLIC_URL ?? 'http://127.0.0.1:8080').replace(/\/+$/, '');
}
