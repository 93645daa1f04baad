import { randomUUID } from 'node:crypto';
import { bootstrapWorkspace, BootstrapResult } from '../../services/tenancy/workspaces';
import { createApiKey, CreateApiKeyInput } from '../../services/tenancy/api-keys';
import { WINDOW_SECONDS } from '../../services/tenancy/api-limits';
import { env } from './environment';
import type { CapabilityContext } from '../../plugins/capability';
import { ManagedTableMemory } from '../../plugins/managed-table/memory';
import { PostgresTablePools } from '../../plugins/postgres-table/pool';
import { SnapshotNotices } from '../../plugins/snapshot-notices';
import { workspaceSchema } from '../../plugins/managed-table/storage';
import { DEFINITIONS_CHANNEL } from '../../services/shared/definition-cache';
import { until } from './polling';

export interface HttpResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface RequestOptions {
  body?: unknown;
  /** Sent verbatim instead of JSON-encoding `body`. */
  rawBody?: string;
  headers?: Record<string, string>;
  key?: string | null;
}

/** A real HTTP request to the test API server. */
export function request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse<T>> {
  return requestAt<T>(env().baseUrl, method, path, options);
}

/** A client bound to one API key, of the test API server or of the API at `baseUrl` (another process). */
export function as(key: string | null, baseUrl?: string) {
  const send = <T>(method: string, path: string, options: RequestOptions) => requestAt<T>(baseUrl ?? env().baseUrl, method, path, { ...options, key });
  return {
    get: <T = any>(path: string, options: RequestOptions = {}) => send<T>('GET', path, options),
    post: <T = any>(path: string, body?: unknown, options: RequestOptions = {}) => send<T>('POST', path, { ...options, body }),
    put: <T = any>(path: string, body?: unknown, options: RequestOptions = {}) => send<T>('PUT', path, { ...options, body }),
    patch: <T = any>(path: string, body?: unknown, options: RequestOptions = {}) => send<T>('PATCH', path, { ...options, body }),
    delete: <T = any>(path: string, options: RequestOptions = {}) => send<T>('DELETE', path, options),
  };
}

/** A fresh workspace (owner, default project, unrestricted org:manage key): each test's own tenant. */
export async function newWorkspace(name = `test-${randomUUID().slice(0, 8)}`): Promise<BootstrapResult> {
  return env().db.transaction((trx) => bootstrapWorkspace(env(), trx, { workspaceName: name }));
}

/**
 * A managed_table capability context of a fresh workspace, as a test calls the capability directly:
 * its own ManagedTableMemory (on the test database), and the workspace's storage schema.
 */
export async function newManagedTableContext(): Promise<{ ctx: CapabilityContext; schema: string }> {
  const workspace = await newWorkspace();
  const ctx: CapabilityContext = { installation: { id: randomUUID(), workspaceId: workspace.workspaceId, settings: {}, credentials: {} }, db: env().db, managedTables: new ManagedTableMemory(env().db), postgresTablePools: new PostgresTablePools(), snapshotNotices: new SnapshotNotices() };
  return { ctx, schema: workspaceSchema(workspace.workspaceId) };
}

/** A key made directly through the service (tests of other routes need keys with given layers). */
export async function newKey(workspace: BootstrapResult, input: Partial<CreateApiKeyInput> & { scopes: string[] }, memberId = workspace.memberId): Promise<string> {
  const { secret } = await createApiKey(env(), env().db, { workspaceId: workspace.workspaceId, memberId }, { name: `key-${randomUUID().slice(0, 6)}`, ...input });
  return secret;
}

/* ---- Helpers for the key, authorization, request-limit and idempotency tests ---- */

/** A real HTTP request to another API process (e.g. a second one started in a test). */
export async function requestAt<T = any>(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  if (text && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed as T };
}

/** The database id of the key with this raw secret (its public prefix finds the row). */
export async function keyIdOf(secret: string): Promise<string> {
  const prefix = /^weft_sk_[A-Za-z0-9]{12}/.exec(secret)?.[0];
  const row = prefix ? await env().db('api_keys').where({ prefix }).first('id') : undefined;
  if (!row) throw new Error('keyIdOf: no key with this secret');
  return row.id as string;
}

/**
 * Fixtures change keys and limits in the database directly. The runtimes of this test process (their
 * one definition cache, env().definitions) hear of it as of a change made through their own service
 * layer, at once; other processes by NOTIFY (test/api/key-revocation.test.ts proves that path).
 */
async function changedKeyOf(secret: string, change: Record<string, unknown>): Promise<void> {
  const [row] = await env().db('api_keys').where({ id: await keyIdOf(secret) }).update(change).returning('workspaceId');
  env().definitions.changed(row.workspaceId);
}

/**
 * Starts this process's definition listener if it has none, and waits until it has heard every
 * change committed so far (a NOTIFY arrives when it arrives; a change to a workspace hands back
 * the leases its runtimes hold, and the listener's start hands back every lease): a marker
 * notified now on the same channel, which PostgreSQL delivers after them (in commit order), or the
 * listener's start, if the marker was sent before it listened. The marker names no workspace, so
 * it resets nothing.
 */
export async function heardDefinitionChanges(): Promise<void> {
  const marker = randomUUID();
  let heard = false;
  const stop = env().definitions.onChange((changed) => void ((changed === marker || changed === undefined) && (heard = true)));
  try {
    env().definitions.start();
    await env().db.raw('SELECT pg_notify(?, ?)', [DEFINITIONS_CHANNEL, marker]);
    await until('this process to hear the definition changes committed so far', () => heard, 30_000, 20);
  } finally {
    stop();
  }
}

/** Puts a key's expiry in the past (the API accepts only future expiries). */
export async function expireKey(secret: string): Promise<void> {
  await changedKeyOf(secret, { expiresAt: env().db.raw("now() - interval '1 minute'") });
}

/** Revokes a key directly, as DELETE /api/v1/api-keys/{key_id} would. */
export async function revokeKey(secret: string): Promise<void> {
  await changedKeyOf(secret, { revokedAt: env().db.fn.now() });
}

/** Lifts a workspace's request limits so a test that sends many requests is not throttled. */
export async function raiseRequestLimits(workspaceId: string): Promise<void> {
  await env().db('api_limit_settings')
    .insert({ workspaceId, workspaceRequests: 2_147_483_646, apiKeyRequests: 2_147_483_646 })
    .onConflict('workspaceId')
    .merge();
  env().definitions.changed(workspaceId);
}

/**
 * Request limits count in fixed windows of WINDOW_SECONDS from the epoch. Holds the test API's
 * clock (env().clock, which the request-path statements pass to the database) at the start of the
 * current window until the test ends (root-hooks.ts releases it): a test that counts requests
 * against a limit sees no window turn between two of its requests, however long it takes. API
 * processes a test starts (startApiScript) keep the same time, so theirs is held too.
 * `clock.advance(WINDOW_SECONDS * 1000)` then moves it into the next window.
 */
export function holdRequestWindow(): void {
  const windowMs = WINDOW_SECONDS * 1000;
  const now = env().clock.now();
  env().clock.set(now - (now % windowMs));
}

/**
 * Every stored row that belongs to these workspaces: the workspace rows and every row of every
 * table with a workspace_id column (new tables are included automatically). Keys' last_used_at is
 * left out: it is bookkeeping written in the background. Compare two snapshots to prove that
 * refused requests changed nothing.
 */
export async function workspaceRows(workspaceIds: string[]): Promise<Record<string, unknown[]>> {
  const db = env().db;
  // Charges this process answered from a charge lease are written first; the leases themselves are
  // bookkeeping (taken and returned in the background, like request counters) and left out.
  for (const workspaceId of workspaceIds) await env().settledCharges(workspaceId);
  const tables = await db.raw(
    `SELECT table_name AS name FROM information_schema.columns
      WHERE table_schema = current_schema() AND column_name = 'workspace_id' AND table_name <> 'charge_leases' ORDER BY table_name`,
  );
  const snapshot: Record<string, unknown[]> = {};
  const read = async (table: string, column: string) => {
    const result = await db.raw(
      `SELECT coalesce(json_agg(r.row ORDER BY r.row::text), '[]'::json) AS snapshot
         FROM (SELECT to_jsonb(t) - 'last_used_at' AS row FROM "${table}" t WHERE t."${column}" = ANY(?::uuid[])) r`,
      [workspaceIds],
    );
    snapshot[table] = result.rows[0].snapshot as unknown[];
  };
  await read('workspaces', 'id');
  for (const { name } of tables.rows as Array<{ name: string }>) await read(name, 'workspace_id');
  return snapshot;
}
