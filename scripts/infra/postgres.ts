import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import pg from 'pg';
import { dataDir } from '../../core/paths';
import { withTlsEnvironment } from '../../db/tls';
import { isRoot, portIsOpen, run, runAsPostgres, say } from './process';
import { alive, machineLeaseRoot } from './leases';

export interface LocalPostgres {
  /** Connection URL for a database on the cluster (the cluster's own superuser, trust auth on loopback only). */
  urlFor(database: string): string;
  /** Stops the cluster (the caller decides whether it should). */
  stop(): void;
  startedHere: boolean;
}

/** The default port avoids a system cluster on 5432. */
const DEFAULT_PORT = 54329;

/** The port a running cluster listens on: line 4 of postmaster.pid. */
function runningPort(dir: string): number {
  return Number(readFileSync(path.join(dir, 'postmaster.pid'), 'utf8').split('\n')[3]);
}

/**
 * WEFT_PG_PORT when set; otherwise the first free port from 54329, so a second clone's cluster
 * (another checkout, a CI clone) does not collide with this one's.
 */
async function choosePort(): Promise<number> {
  if (process.env.WEFT_PG_PORT) return Number(process.env.WEFT_PG_PORT);
  for (let candidate = DEFAULT_PORT; candidate < DEFAULT_PORT + 50; candidate++) {
    if (portIsClaimed(candidate)) continue;
    if (!(await portIsOpen('127.0.0.1', candidate))) return candidate;
  }
  throw new Error(`No free port for PostgreSQL in ${DEFAULT_PORT}-${DEFAULT_PORT + 49}; set WEFT_PG_PORT.`);
}

/** The newest PostgreSQL (15 or later) of the Debian packages, installed when missing and running as root. */
export function findPostgresBin(): string {
  const roots = ['/usr/lib/postgresql'];
  for (const root of roots) {
    if (!existsSync(root)) continue;
    const versions = readdirSync(root).map(Number).filter((v) => v >= 15).sort((a, b) => b - a);
    for (const version of versions) {
      const bin = path.join(root, String(version), 'bin');
      if (existsSync(path.join(bin, 'pg_ctl'))) return bin;
    }
  }
  if (isRoot()) {
    say('PostgreSQL 15 is not installed; installing the Debian package postgresql-15…');
    run('apt-get', ['update', '-q'], { stdio: 'inherit' });
    run('apt-get', ['install', '-y', '-q', 'postgresql-15'], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    return '/usr/lib/postgresql/15/bin';
  }
  throw new Error('PostgreSQL 15 was not found under /usr/lib/postgresql. Install the postgresql-15 package or set DATABASE_URL.');
}

/**
 * Where the cluster lives. Normally <data>/postgres. As root the files must belong to the
 * postgres user, who may not be able to reach a clone inside a private folder (mktemp -d is
 * 0700); then the cluster goes under the postgres user's home, keyed by this clone's path.
 */
function clusterDirectory(): { dir: string; outsideClone: boolean } {
  const inClone = path.join(dataDir(), 'postgres');
  const problem = clusterOwnershipProblem(inClone, isRoot() ? { uid: uid('postgres'), root: true } : { uid: process.getuid!(), root: false });
  if (problem) throw new Error(problem);
  if (!isRoot()) return { dir: inClone, outsideClone: false };
  mkdirSync(inClone, { recursive: true });
  chownSync(inClone, uid('postgres'), gid('postgres'));
  try {
    run('runuser', ['-u', 'postgres', '--', 'test', '-w', inClone]);
    return { dir: inClone, outsideClone: false };
  } catch {
    const key = createHash('sha256').update(dataDir()).digest('hex').slice(0, 16);
    const dir = path.join('/var/lib/postgresql/weft-clusters', key);
    mkdirSync(dir, { recursive: true });
    chownSync(path.dirname(dir), uid('postgres'), gid('postgres'));
    chownSync(dir, uid('postgres'), gid('postgres'));
    writeFileSync(path.join(inClone, 'LOCATION'), `The cluster lives in ${dir} (the postgres user cannot reach this folder).\n`);
    return { dir, outsideClone: true };
  }
}

const uid = (user: string): number => Number(run('id', ['-u', user]).trim());
const userName = (id: number): string => {
  try {
    return run('id', ['-nu', String(id)]).trim();
  } catch {
    return `uid ${id}`;
  }
};

/**
 * Why this run cannot use the clone's cluster folder, or null. A run as root hands the folder to
 * the `postgres` user (PostgreSQL refuses to run as root); a later run as someone else could
 * neither start that cluster nor should it quietly initialise a second, empty one elsewhere.
 * `runsAs.uid` is whom the cluster's files must belong to: postgres for a run as root, the user otherwise.
 */
export function clusterOwnershipProblem(dir: string, runsAs: { uid: number; root: boolean }): string | null {
  const { root } = runsAs;
  const location = path.join(dir, 'LOCATION');
  if (!root && existsSync(location) && !existsSync(path.join(dir, 'PG_VERSION'))) {
    return (
      `This clone's PostgreSQL cluster was created by a run as root and lives outside the clone (${readFileSync(location, 'utf8').trim()}). ` +
      `Run as root again (sudo npm start), or remove ${dir} (sudo rm -rf ${dir}) to start a new, empty cluster as ${userName(runsAs.uid)}, or set DATABASE_URL.`
    );
  }
  if (!existsSync(path.join(dir, 'PG_VERSION'))) return null;
  const owner = statSync(dir).uid;
  if (owner === runsAs.uid) return null;
  const me = userName(runsAs.uid);
  return root
    ? `The PostgreSQL cluster in ${dir} belongs to ${userName(owner)}, who created it without root; as root Weft runs it as the postgres user. ` +
        `Run as ${userName(owner)} instead, or hand it over: chown -R postgres:postgres ${dir}.`
    : `The PostgreSQL cluster in ${dir} belongs to ${userName(owner)} (an earlier run as root handed .data/ to the postgres user), so ${me} cannot start it. ` +
        `Run as root again (sudo npm start), or take it over with its data: sudo chown -R ${me} ${dir}; or start afresh without it: sudo rm -rf ${dir}. Or set DATABASE_URL.`;
}
const gid = (user: string): number => Number(run('id', ['-g', user]).trim());

function isRunning(bin: string, dir: string): boolean {
  try {
    runAsPostgres(path.join(bin, 'pg_ctl'), ['status', '-D', dir]);
    return true;
  } catch {
    return false;
  }
}

function startCluster(bin: string, dir: string, port: number): void {
  // Commits are synchronous (PostgreSQL's default): an activity reports its work to Temporal only
  // after it committed, and with synchronous_commit=off a crash of PostgreSQL could lose a commit
  // already reported, such as a run whose workflow completed while its records vanished.
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`;
  runAsPostgres(path.join(bin, 'pg_ctl'), ['start', '-D', dir, '-w', '-t', '60', '-l', path.join(dir, 'server.log'), '-o', options]);
}

/**
 * Stops the project-local cluster (fast: open connections are cut, as in a crash or failover),
 * runs `whileDown`, and starts it again on the same port. For the reliability suite; it refuses
 * to touch anything but this clone's own cluster.
 */
export async function restartLocalPostgres(whileDown: () => Promise<void>): Promise<void> {
  const bin = findPostgresBin();
  const { dir } = clusterDirectory();
  if (!isRunning(bin, dir)) throw new Error('The project-local PostgreSQL is not running (is DATABASE_URL an external server?).');
  const port = runningPort(dir);
  // While it is down its port looks free: another clone starting its cluster then took it, and
  // this one could not start again (a CI clone's reliability run beside a working tree's tests).
  const claim = claimPort(port);
  try {
    runAsPostgres(path.join(bin, 'pg_ctl'), ['stop', '-D', dir, '-m', 'fast', '-w']);
    try {
      await whileDown();
    } finally {
      startCluster(bin, dir, port);
    }
  } finally {
    claim.release();
  }
}

/** Where a cluster stopped for a restart claims its port on this machine (leases.ts's folder). */
const portClaimFile = (port: number) => path.join(machineLeaseRoot(), `postgres-port-${port}.claim`);

/** Claims a port for this process until released: choosePort on this machine passes it by. */
export function claimPort(port: number, holder = process.pid): { release(): void } {
  const file = portClaimFile(port);
  writeFileSync(file, String(holder));
  return { release: () => rmSync(file, { force: true }) };
}

/** Whether a live process of this user claims the port (a claim of a dead one is cleared). */
export function portIsClaimed(port: number): boolean {
  const file = portClaimFile(port);
  if (!existsSync(file)) return false;
  if (alive(Number(readFileSync(file, 'utf8')))) return true;
  rmSync(file, { force: true });
  return false;
}

/** Initializes (once) and starts the project-local PostgreSQL cluster, or reuses it when running. */
export async function startLocalPostgres(): Promise<LocalPostgres> {
  const bin = findPostgresBin();
  const { dir, outsideClone } = clusterDirectory();
  const superuser = 'weft';

  if (!existsSync(path.join(dir, 'PG_VERSION'))) {
    say(`initializing a PostgreSQL cluster in ${dir}`);
    runAsPostgres(path.join(bin, 'initdb'), ['-D', dir, '-U', superuser, '--auth=trust', '--encoding=UTF8', '--no-instructions']);
  }

  let startedHere = false;
  let port: number;
  if (isRunning(bin, dir)) {
    port = runningPort(dir);
  } else {
    port = await choosePort();
    say(`starting PostgreSQL on 127.0.0.1:${port}`);
    startCluster(bin, dir, port);
    startedHere = true;
  }

  const urlFor = (database: string) => `postgres://${superuser}@127.0.0.1:${port}/${database}`;
  return {
    urlFor,
    startedHere,
    stop() {
      if (!isRunning(bin, dir)) return;
      say('stopping PostgreSQL');
      runAsPostgres(path.join(bin, 'pg_ctl'), ['stop', '-D', dir, '-m', 'fast', '-w']);
      // A cluster outside the clone belongs to a throw-away clone (CI); leave nothing behind.
      if (outsideClone && process.env.CI) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Creates the database when missing (CREATE DATABASE cannot run inside a transaction or use IF NOT EXISTS). */
export async function ensureDatabase(adminUrl: string, database: string, options: { recreate?: boolean } = {}): Promise<void> {
  const client = new pg.Client({ connectionString: withTlsEnvironment(adminUrl) });
  await client.connect();
  try {
    const quoted = `"${database.replace(/"/g, '""')}"`;
    if (options.recreate) await client.query(`DROP DATABASE IF EXISTS ${quoted} WITH (FORCE)`);
    const exists = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [database]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${quoted}`);
  } finally {
    await client.end();
  }
}

export async function dropDatabase(adminUrl: string, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: withTlsEnvironment(adminUrl) });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${database.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/** The URL of another database on the server `url` names, keeping its user, host and parameters (sslmode…). */
export function urlForDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(database)}`;
  return parsed.toString();
}

/**
 * A database of its own for a throwaway run (npm test, a bench) on the server an external
 * DATABASE_URL names: created beside the named database, which is only used to issue CREATE
 * DATABASE and never migrated or written. A random suffix keeps runs from other machines apart.
 */
export async function createThrowawayDatabase(serverUrl: string, prefix: string): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  const named = decodeURIComponent(new URL(serverUrl).pathname.slice(1)) || '(the default database)';
  const client = new pg.Client({ connectionString: withTlsEnvironment(serverUrl) });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE "${name}"`);
  } catch (error) {
    if ((error as { code?: string }).code === '42501') {
      const role = decodeURIComponent(new URL(serverUrl).username) || 'the DATABASE_URL role';
      throw new Error(
        `${role} may not create databases on the DATABASE_URL server, and this run needs a throwaway database of its own ` +
          `(it never migrates or writes into ${named}). Grant it (ALTER ROLE ${role} CREATEDB), use a role that may, ` +
          'or unset DATABASE_URL to use the local cluster.',
        { cause: error },
      );
    }
    throw error;
  } finally {
    await client.end();
  }
  return {
    name,
    url: urlForDatabase(serverUrl, name),
    drop: () => dropDatabase(serverUrl, name),
  };
}
