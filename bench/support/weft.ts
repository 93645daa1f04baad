/**
 * Weft for a benchmark: the project's own PostgreSQL and Temporal (or the external ones in
 * DATABASE_URL / TEMPORAL_ADDRESS), a fresh database, and the API and worker as separate child
 * processes started the way `npm run api` / `npm run worker` start them (built: see startRole), so
 * their CPU and memory are their own. A tenant with every scope and no request limits is ready to call.
 * WEFT_BENCH_KEEP_DATABASE=1 keeps the database after the run (to EXPLAIN Weft's statements over it).
 */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createDb, Db } from '../../db/connection';
import { prepareInfrastructure } from '../../scripts/infra/environment';
import { freePort } from '../../scripts/infra/process';
import { migrate } from '../../scripts/runtime';
import { bootstrapWorkspace } from '../../services/tenancy/workspaces';
import { createApiKey } from '../../services/tenancy/api-keys';
import { installPlugin } from '../../services/endpoints/plugins';
import { loadEncryptionKey } from '../../core/config';
import { systemClock } from '../../core/clock';
import { DefinitionCache } from '../../services/shared/definition-cache';
import { SCOPES } from '../../core/scopes';
import { dataDir, projectRoot } from '../../core/paths';
import { SERVICE_NODE_ARGS, WORKER_NODE_ARGS } from '../../worker/node-args';
import { buildDir, ensureServiceBuilt } from '../../scripts/build';
import { ensureConsoleBuilt } from '../../scripts/console-build';

export interface BenchTenant {
  workspaceId: string;
  projectId: string;
  memberId: string;
  key: string;
  managedInstallationId: string;
}

export interface BenchWeft {
  baseUrl: string;
  databaseUrl: string;
  temporalAddress: string;
  taskQueue: string;
  db: Db;
  encryptionKey: Buffer;
  /** The definition cache of what the bench calls in process (workerDependencies(weft) picks it up); closed by stop(). */
  definitions: DefinitionCache;
  api: ChildProcess;
  worker?: ChildProcess;
  tenant: BenchTenant;
  /** A new tenant (workspace, owner key with every scope, no request limits, managed_table installed). */
  newTenant(installations?: { httpBaseUrl?: string }): Promise<BenchTenant & { httpInstallationId?: string }>;
  stop(): Promise<void>;
}

export { freePort };

async function waitReady(url: string, child: ChildProcess, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the API process exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`the API at ${url} was not ready within ${timeoutMs} ms`);
}

/**
 * What the benches run: the build (dist/, built first when stale), as `npm start` runs it, or with
 * WEFT_BENCH_CODE=sources the TypeScript sources through tsx's hook, as `npm start` ran them before
 * the build (the before/after figures of bench/README.md's api section).
 */
const fromSources = process.env.WEFT_BENCH_CODE === 'sources';

/** Starts `scripts/start.ts <role>` (built: dist/scripts/start.js) as a child process with the bench's environment. */
export function startRole(role: 'api' | 'worker', env: NodeJS.ProcessEnv, nodeArgs: string[] = []): ChildProcess {
  // Structured logs (stdout) go to a file, as a deployment would ship them; start-up messages (stderr) show.
  const logFile = path.join(dataDir(), 'bench', `${role}-${process.pid}.log`);
  mkdirSync(path.dirname(logFile), { recursive: true });
  if (!fromSources) ensureServiceBuilt();
  // The API serves the console's bundle (a clean clone has none until it is built).
  if (role === 'api') ensureConsoleBuilt();
  // tsx enables source maps as --enable-source-maps does: the sources run with the same flags.
  const script = fromSources ? ['--require', 'tsx/cjs', path.join(projectRoot, 'scripts/start.ts')] : [path.join(buildDir(), 'scripts/start.js')];
  const child = spawn(process.execPath, [...nodeArgs, ...(role === 'worker' ? WORKER_NODE_ARGS : SERVICE_NODE_ARGS), ...script, role], {
    cwd: projectRoot,
    env,
    stdio: ['ignore', openSync(logFile, 'w'), 'inherit'],
  });
  return child;
}

export async function stopChild(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}

export async function startBenchWeft(options: { name: string; worker?: boolean; temporal?: boolean; apiEnv?: NodeJS.ProcessEnv; apiNodeArgs?: string[]; workerNodeArgs?: string[] }): Promise<BenchWeft> {
  const temporal = options.temporal ?? Boolean(options.worker);
  // A database per run (like npm test's): two runs of one bench at once (two engineers, a
  // worktree's and the tree's) each recreated and dropped the one fixed name, so one run's key
  // vanished under the other mid-measurement (401 invalid_credential).
  const infra = await prepareInfrastructure({ database: `weft_bench_${options.name}_${process.pid}${process.env.WEFT_BENCH_DATABASE_SUFFIX ?? ''}`, recreateDatabase: true, dropDatabaseOnStop: !process.env.WEFT_BENCH_KEEP_DATABASE, temporal });
  const db = createDb(infra.databaseUrl, { max: 10 });
  await migrate(db);
  const encryptionKey = loadEncryptionKey();
  const definitions = new DefinitionCache(db, systemClock);
  const port = await freePort();
  const taskQueue = `weft-bench-${options.name}-${process.pid}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: infra.databaseUrl,
    // A bench without Temporal still gives the API an address; nothing it measures uses it.
    TEMPORAL_ADDRESS: infra.temporalAddress || process.env.TEMPORAL_ADDRESS || '127.0.0.1:7233',
    WEFT_TASK_QUEUE: taskQueue,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    PORT: String(port),
    HOST: '127.0.0.1',
  };
  let worker: ChildProcess | undefined;
  let api: ChildProcess | undefined;
  const stop = async () => {
    await stopChild(api);
    await stopChild(worker);
    await definitions.close();
    await db.destroy().catch(() => undefined);
    await infra.stop().catch(() => undefined);
  };
  try {
    if (options.worker) worker = startRole('worker', env, options.workerNodeArgs);
    api = startRole('api', { ...env, ...options.apiEnv }, options.apiNodeArgs);
    const baseUrl = `http://127.0.0.1:${port}`;
    await waitReady(baseUrl, api);

    const newTenant = async (installations: { httpBaseUrl?: string } = {}) => {
      const ws = await db.transaction((trx) => bootstrapWorkspace({ clock: systemClock }, trx, { workspaceName: `bench-${randomUUID().slice(0, 8)}` }));
      await db('api_limit_settings').insert({ workspaceId: ws.workspaceId, workspaceRequests: 2_147_483_646, apiKeyRequests: 2_147_483_646 }).onConflict('workspaceId').merge();
      const { secret } = await createApiKey({ clock: systemClock }, db, { workspaceId: ws.workspaceId, memberId: ws.memberId }, { name: 'bench', scopes: [...SCOPES] });
      const managed = await installPlugin(db, encryptionKey, ws.workspaceId, 'managed_table', {});
      const http = installations.httpBaseUrl
        ? await installPlugin(db, encryptionKey, ws.workspaceId, 'http_dataset', { baseUrl: installations.httpBaseUrl, allowPrivateNetwork: true })
        : undefined;
      return { workspaceId: ws.workspaceId, projectId: ws.projectId, memberId: ws.memberId, key: secret, managedInstallationId: managed.id, httpInstallationId: http?.id };
    };
    const tenant = await newTenant();
    return { baseUrl, databaseUrl: infra.databaseUrl, temporalAddress: env.TEMPORAL_ADDRESS!, taskQueue, db, encryptionKey, definitions, api, worker, tenant, newTenant, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A JSON request to the bench's API with the tenant's key. */
export async function call<T = any>(weft: { baseUrl: string }, key: string | null, method: string, pathname: string, body?: unknown): Promise<{ status: number; body: T }> {
  const response = await fetch(`${weft.baseUrl}${pathname}`, {
    method,
    headers: { ...(key === null ? {} : { Authorization: `Bearer ${key}` }), ...(body === undefined ? {} : { 'Content-Type': 'application/json' }), ...(method === 'POST' && /execute$/.test(pathname) ? { 'Idempotency-Key': randomUUID() } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** CPU time (user + system, ms) a process has used so far, from /proc: load-independent cost. */
export function cpuTimeMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the command name.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = 100;

/** Peak resident memory (VmHWM) and current (VmRSS) of a process, in MB. */
export function memoryMb(pid: number): { rss: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
  return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
}
