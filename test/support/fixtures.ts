import { randomUUID } from 'node:crypto';
import { bootstrapWorkspace, BootstrapResult } from '../../services/workspaces';
import { createApiKey, CreateApiKeyInput } from '../../services/api-keys';
import { env } from './environment';

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
export async function request<T = any>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers.Authorization = `Bearer ${options.key}`;
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const response = await fetch(`${env().baseUrl}${path}`, { method, headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  if (text && /json/.test(response.headers.get('content-type') ?? '')) parsed = JSON.parse(text);
  return { status: response.status, headers: response.headers, body: parsed as T };
}

/** A client bound to one API key. */
export function as(key: string | null) {
  return {
    get: <T = any>(path: string, options: RequestOptions = {}) => request<T>('GET', path, { ...options, key }),
    post: <T = any>(path: string, body?: unknown, options: RequestOptions = {}) => request<T>('POST', path, { ...options, body, key }),
    put: <T = any>(path: string, body?: unknown, options: RequestOptions = {}) => request<T>('PUT', path, { ...options, body, key }),
    patch: <T = any>(path: string, body?: unknown, options: RequestOptions = {}) => request<T>('PATCH', path, { ...options, body, key }),
    delete: <T = any>(path: string, options: RequestOptions = {}) => request<T>('DELETE', path, { ...options, key }),
  };
}

/** A fresh workspace (owner, default project, unrestricted org:manage key): each test's own tenant. */
export async function newWorkspace(name = `test-${randomUUID().slice(0, 8)}`): Promise<BootstrapResult> {
  return env().db.transaction((trx) => bootstrapWorkspace(trx, { workspaceName: name }));
}

/** A key made directly through the service (tests of other routes need keys with given layers). */
export async function newKey(workspace: BootstrapResult, input: Partial<CreateApiKeyInput> & { scopes: string[] }, memberId = workspace.memberId): Promise<string> {
  const { secret } = await createApiKey(env().db, { workspaceId: workspace.workspaceId, memberId }, { name: `key-${randomUUID().slice(0, 6)}`, ...input });
  return secret;
}
