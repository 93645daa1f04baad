import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { installPlugin } from '../../services/endpoints/plugins';
import type { BootstrapResult } from '../../services/tenancy/workspaces';
import { env } from './environment';
import { as, newKey, newWorkspace, raiseRequestLimits } from './fixtures';

export interface EventRecord {
  id: number;
  updated_at: string;
  amount: number;
  status: string;
}

export interface ReceivedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  body: Record<string, unknown> | null;
}

/**
 * A real paginated HTTP API for pipeline tests: GET or POST /events answers
 * {data: [...], page} from `records`, filtered by a time window (start/end parameters in the query
 * or the JSON body, in any of the window formats) and paged with page/per_page. Tests change
 * `records`, make the next requests fail, or slow every page down.
 */
export class EventsApi {
  records: EventRecord[] = [];
  received: ReceivedRequest[] = [];
  /** Requests answered 500 before the API behaves again. */
  failNext = 0;
  /** Milliseconds each page waits before answering. */
  delayMs = 0;
  /** While set, requests for pages from `from` on wait until released (see holdFrom). */
  private held?: { from: number; released: Promise<void>; release: () => void };
  private server?: http.Server;
  baseUrl = '';

  async start(): Promise<this> {
    this.server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => void this.answer(req, text, res));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/`;
    return this;
  }

  close(): Promise<void> {
    this.server?.closeAllConnections();
    return new Promise((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** Generates `count` events from id `from`, one minute apart, ending `endMinutesAgo` before now. */
  static events(count: number, { from = 1, endMinutesAgo = 1 } = {}): EventRecord[] {
    const end = Date.now() - endMinutesAgo * 60_000;
    return Array.from({ length: count }, (_, i) => ({
      id: from + i,
      updated_at: new Date(end - (count - 1 - i) * 60_000).toISOString(),
      amount: (from + i) * 10,
      status: (from + i) % 2 ? 'open' : 'closed',
    }));
  }

  /**
   * Holds every request for page `from` or later until the returned function is called: a run is
   * then surely still reading, however slowly a test observes it.
   */
  holdFrom(from: number): () => void {
    this.release();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const held = { from, released, release };
    this.held = held;
    return () => {
      if (this.held === held) this.held = undefined;
      release();
    };
  }

  /** Lets every held request go (a hold a failed test left behind too). */
  release(): void {
    this.held?.release();
    this.held = undefined;
  }

  windowParams(): Array<{ start?: string; end?: string }> {
    return this.received.filter((r) => r.path === '/events').map((r) => {
      const source = r.body ?? r.query;
      return { start: source.since as string | undefined, end: source.until as string | undefined };
    });
  }

  private async answer(req: http.IncomingMessage, text: string, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let body: Record<string, unknown> | null = null;
    try {
      body = text ? (JSON.parse(text) as Record<string, unknown>) : null;
    } catch {
      body = null;
    }
    this.received.push({ method: req.method ?? 'GET', path: url.pathname, query: Object.fromEntries(url.searchParams), body });
    if (this.delayMs) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    const held = this.held;
    if (held && Number(body?.page ?? url.searchParams.get('page') ?? 1) >= held.from) await held.released;
    if (this.failNext > 0) {
      this.failNext--;
      res.writeHead(500, { 'Content-Type': 'application/json' }).end('{"error":"temporarily broken"}');
      return;
    }
    if (url.pathname !== '/events') {
      res.writeHead(404).end();
      return;
    }
    const param = (name: string) => (body?.[name] ?? url.searchParams.get(name) ?? undefined) as string | number | undefined;
    const toTime = (value: string | number | undefined) => {
      if (value === undefined) return undefined;
      if (typeof value === 'number' || /^\d+$/.test(value)) {
        const n = Number(value);
        return n < 1e11 ? n * 1000 : n;
      }
      return Date.parse(value);
    };
    const start = toTime(param('since'));
    const end = toTime(param('until'));
    const page = Number(param('page') ?? 1);
    const perPage = Number(param('per_page') ?? 100);
    const inWindow = this.records.filter((r) => {
      const at = Date.parse(r.updated_at);
      return (start === undefined || at >= start) && (end === undefined || at < end);
    });
    const data = inWindow.slice((page - 1) * perPage, page * perPage);
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ data, page }));
  }
}

/** A tenant for pipeline tests: a workspace with no request limits, an admin key with every pipeline and data scope, and the two capabilities installed. */
export interface PipelineTenant {
  ws: BootstrapResult;
  key: string;
  projectId: string;
  httpInstallationId: string;
  managedInstallationId: string;
  client: ReturnType<typeof as>;
}

export const PIPELINE_SCOPES = [
  'pipelines:read', 'pipelines:write', 'pipelines:execute', 'runs:read', 'endpoints:read', 'endpoints:write', 'data:read', 'projects:read',
];

export async function pipelineTenant(apiBaseUrl: string, installationExtra: Record<string, unknown> = {}): Promise<PipelineTenant> {
  const ws = await newWorkspace();
  await raiseRequestLimits(ws.workspaceId);
  const { db, encryptionKey } = env();
  const http = await installPlugin(db, encryptionKey, ws.workspaceId, 'http_dataset', { baseUrl: apiBaseUrl, allowPrivateNetwork: true, ...installationExtra });
  const managed = await installPlugin(db, encryptionKey, ws.workspaceId, 'managed_table', {});
  const key = await newKey(ws, { scopes: PIPELINE_SCOPES });
  return { ws, key, projectId: ws.projectId, httpInstallationId: http.id, managedInstallationId: managed.id, client: as(key) };
}

let counter = 0;
const unique = (base: string) => `${base}-${Date.now().toString(36)}-${++counter}`;

/** An events source endpoint; `target` overrides merge into the default target. */
export async function eventsSource(t: PipelineTenant, api: EventsApi, target: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): Promise<string> {
  const res = await t.client.post('/api/v1/data-endpoints', {
    name: unique('events'),
    namespace: 'tests',
    role: 'source',
    contractKind: 'source_stream',
    pluginCapabilityInstallationId: t.httpInstallationId,
    target: {
      request: { url: `${api.baseUrl}events` },
      response: { format: 'json', recordsPath: 'data' },
      primaryKeys: ['id'],
      pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 25 },
      ...target,
    },
    ...extra,
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.dataEndpoint.id;
}

/** A managed-table destination endpoint. */
export async function tableDestination(t: PipelineTenant, table: string, primaryKey?: string[], role: 'destination' | 'source' = 'destination'): Promise<string> {
  const res = await t.client.post('/api/v1/data-endpoints', {
    name: unique(table),
    namespace: 'tests',
    role,
    contractKind: role === 'destination' ? 'sink_table' : 'source_stream',
    pluginCapabilityInstallationId: t.managedInstallationId,
    target: { table, ...(primaryKey ? { primaryKey } : {}) },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.dataEndpoint.id;
}

/** source → destination, optionally through transform nodes in order. */
export function linearDocument(sourceId: string, destinationId: string, options: { mode?: 'full' | 'incremental'; writeMode?: 'append' | 'upsert' | 'replace'; transforms?: Array<Record<string, unknown>>; cursorField?: string } = {}) {
  const transforms = (options.transforms ?? []).map((node, i) => ({ id: `t${i + 1}`, ...node }));
  const ids = ['src', ...transforms.map((n) => n.id as string), 'dst'];
  return {
    nodes: [
      { id: 'src', type: 'source', endpointId: sourceId, mode: options.mode ?? 'full', ...(options.cursorField ? { cursorField: options.cursorField } : {}) },
      ...transforms,
      { id: 'dst', type: 'destination', endpointId: destinationId, writeMode: options.writeMode ?? 'append' },
    ],
    edges: ids.slice(1).map((to, i) => ({ from: ids[i], to })),
  };
}

export async function createPipeline(t: PipelineTenant, document: unknown, name = unique('pipeline')): Promise<{ id: string; versionId: string }> {
  const res = await t.client.post(`/api/v1/projects/${t.projectId}/pipelines`, { name, document });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return { id: res.body.pipeline.id, versionId: res.body.version.id };
}

export async function launch(t: PipelineTenant, pipelineId: string): Promise<any> {
  const res = await t.client.post(`/api/v1/projects/${t.projectId}/pipelines/${pipelineId}/execute`);
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.run;
}

export async function getRun(t: PipelineTenant, runId: string): Promise<any> {
  const res = await t.client.get(`/api/v1/projects/${t.projectId}/runs/${runId}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.run;
}

/** Polls a run until `done` holds (default: it ended), or fails after `timeoutMs`. */
export async function waitForRun(t: PipelineTenant, runId: string, done: (run: any) => boolean = (run) => ['succeeded', 'failed', 'canceled'].includes(run.status), timeoutMs = 60_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const run = await getRun(t, runId);
    if (done(run)) return run;
    if (Date.now() > deadline) throw new Error(`run ${runId} did not reach the expected state: ${JSON.stringify({ status: run.status, nodes: run.nodes, error: run.error })}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** Every current record of a managed table, read through the records API, sorted by id. */
export async function tableRecords(t: PipelineTenant, endpointId: string): Promise<Array<Record<string, unknown>>> {
  const records: Array<Record<string, unknown>> = [];
  let cursor: string | null = null;
  do {
    const res: any = await t.client.get(`/api/v1/data-endpoints/${endpointId}/records?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    records.push(...res.body.data);
    cursor = res.body.metadata.nextCursor;
  } while (cursor);
  return records.sort((a, b) => Number(a.id) - Number(b.id));
}

/**
 * Mocha hooks for a describe block: one EventsApi and one tenant for the block, and before each
 * test the API's records reset to `records()`, with no failures, delay or request log.
 */
export function useEventsApi(records: () => EventRecord[]): { api: EventsApi; t: PipelineTenant } {
  const context = {} as { api: EventsApi; t: PipelineTenant };
  before(async () => {
    context.api = await new EventsApi().start();
    context.t = await pipelineTenant(context.api.baseUrl);
  });
  after(() => context.api.close());
  beforeEach(() => {
    context.api.release();
    Object.assign(context.api, { records: records(), received: [], failNext: 0, delayMs: 0 });
  });
  return context;
}

/**
 * The extract and commit activities' heartbeat timeout of the runs this process's API launches from
 * now on (WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS, WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS, read at each launch);
 * the function returned puts them back.
 */
export function runHeartbeatTimeouts(ms: number): () => void {
  const names = ['WEFT_EXTRACT_HEARTBEAT_TIMEOUT_MS', 'WEFT_COMMIT_HEARTBEAT_TIMEOUT_MS'];
  const saved = names.map((name) => process.env[name]);
  for (const name of names) process.env[name] = String(ms);
  return () => names.forEach((name, i) => {
    if (saved[i] === undefined) delete process.env[name];
    else process.env[name] = saved[i];
  });
}
