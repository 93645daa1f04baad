import { randomUUID } from 'node:crypto';
import type Koa from 'koa';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { MAX_BATCH_SIZE } from '@modelcontextprotocol/sdk/server/requestBody.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema, CallToolResult, ErrorCode, isInitializeRequest, JSONRPCMessageSchema, ListToolsRequestSchema, McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { DomainError, InputError, NotFoundError, RateLimitError } from '../core/errors';
import { logger } from '../core/logger';
import { schemaProblems, summarizeProblems } from '../core/schema-validator';
import { Problem, problem, problemFromDomainError } from '../core/problem';
import type { Project } from '../db/models';
import type { Caller, ServiceDependencies } from '../services/operations/context';
import { domainErrorFromDatabase } from '../services/operations/database-errors';
import { admit, execute } from '../services/operations/invoke';
import type { Reply } from '../services/operations/operation';
import type { Principal } from '../services/tenancy/access';
import type { ApiLimits, LimitHeaders } from '../services/tenancy/api-limits';
import { authenticateBearer } from '../services/tenancy/bearer';
import { openProjectConnectionOperation } from '../services/tenancy/connections';
import { toolInputSchema, toolTakesProject, tools, ToolSpec } from './tools';

// The MCP endpoint (Streamable HTTP, the official SDK). Every HTTP request of a session is
// authenticated with the same Bearer key and request limits as the REST API; a session belongs
// to the key that initialized it. A JSON-RPC batch (revisions up to 2025-03-26, which the SDK still
// negotiates) counts one request per message, all charged before any runs, or is refused whole
// with 429 (chargedMessages). /mcp is a workspace connection (project tools take projectId);
// /mcp/projects/{project_id} is bound to one project (tools take no projectId).

interface Session {
  transport: StreamableHTTPServerTransport;
  apiKeyId: string;
  projectId: string | null;
  lastSeenAt: number;
}

/** The HTTP request carrying a JSON-RPC message: tool calls authorize against its principal and log its id. */
interface CarryingRequest {
  principal: Principal;
  requestId: string;
}

/** Sessions live in the API process's memory; a client idle this long initializes again (HTTP 404 on its old id, as the protocol says). */
export const SESSION_IDLE_MS = 30 * 60_000;

/** The MCP sessions of one API (one mcpMiddleware), by id: two APIs in one process share none. */
type Sessions = Map<string, Session>;

function closeIdleSessions(sessions: Sessions, now: number): void {
  for (const [id, session] of sessions) {
    if (now - session.lastSeenAt <= SESSION_IDLE_MS) continue;
    sessions.delete(id);
    void session.transport.close().catch(() => undefined);
  }
}
const PATH = /^\/mcp(?:\/projects\/([0-9a-f-]{36}))?\/?$/;

const asResult = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value as Record<string, unknown> });

/**
 * A refusal as a tool result: isError, with the HTTP problem body (same code, message and
 * details). Unexpected failures are logged and reveal nothing but the request id.
 */
function errorResult(error: unknown, requestId: string, tool: string): CallToolResult {
  const known = error instanceof DomainError ? error : domainErrorFromDatabase(error);
  let body: Problem | undefined = known ? problemFromDomainError(known, requestId) : undefined;
  if (!body) {
    logger.error({ requestId, tool, err: { message: (error as Error).message, stack: (error as Error).stack } }, 'unhandled MCP tool error');
    body = problem(500, 'internal_error', 'Something went wrong on our side. The request id identifies it in our logs.', requestId);
  }
  return { ...asResult(body), isError: true };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The access checks that come before the arguments are read, in the order HTTP makes them: the
 * key's layers, then the project (the connection's, or a well-formed projectId argument, as HTTP
 * checks the project of a valid path before it reads the body). A key that may not call the tool
 * learns nothing of its argument schema, and gets the code its HTTP route answers.
 */
async function admitCall(caller: Caller, tool: ToolSpec, args: Record<string, unknown>, boundProjectId: string | null): Promise<Project | undefined> {
  await admit(caller, tool.operation);
  if (!toolTakesProject(tool)) return undefined;
  const projectId = boundProjectId ?? args.projectId;
  return typeof projectId === 'string' && UUID.test(projectId) ? admit(caller, tool.operation, projectId) : undefined;
}

/** A tool call: the operation the tool names, invoked as the calling key (the tool adds only transport). */
async function callTool(tool: ToolSpec, args: Record<string, unknown>, caller: Caller, boundProjectId: string | null, admitted: Project | undefined) {
  // confirm was checked by the schema (const true); the operation gets only the tool's own arguments.
  const own = { ...args };
  const { projectId, idempotencyKey } = args;
  for (const name of ['projectId', 'idempotencyKey', 'confirm']) delete own[name];
  const input = tool.input(own, toolTakesProject(tool) ? (boundProjectId ?? String(projectId)) : undefined);
  const call: Caller = { ...caller, idempotencyKey: typeof idempotencyKey === 'string' ? idempotencyKey : undefined };
  const { output, replayed } = await execute(call, tool.operation, input, { admitted });
  // A tool's result is the body of the operation's reply: it has no status or headers.
  return { value: (output as Reply).body, replayed };
}

function buildServer(deps: ServiceDependencies, boundProjectId: string | null): Server {
  const bound = boundProjectId !== null;
  const server = new Server({ name: 'weft', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: toolInputSchema(tool, bound) as never, annotations: tool.annotations })),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = tools.find((t) => t.name === request.params.name);
    if (!tool) throw new McpError(ErrorCode.MethodNotFound, `Unknown tool "${request.params.name}".`);
    // The validator fills defaults into the arguments, so validate a copy.
    const args = structuredClone(request.params.arguments ?? {}) as Record<string, unknown>;
    const { principal, requestId } = extra.authInfo!.extra as unknown as CarryingRequest;
    const caller: Caller = { deps, principal, door: 'mcp', requestId };
    // Access first, as over HTTP: a refusal is the same tool error whatever the arguments are.
    let admitted: Project | undefined;
    try {
      admitted = await admitCall(caller, tool, args, boundProjectId);
    } catch (error) {
      return errorResult(error, requestId, tool.name);
    }
    const problems = schemaProblems(toolInputSchema(tool, bound), args);
    if (problems.length) throw new McpError(ErrorCode.InvalidParams, `Invalid arguments for ${tool.name}: ${summarizeProblems(problems)}`, { errors: problems });
    try {
      const { value, replayed } = await callTool(tool, args, caller, boundProjectId, admitted);
      return replayed ? { ...asResult(value), _meta: { idempotentReplayed: true } } : asResult(value);
    } catch (error) {
      return errorResult(error, requestId, tool.name);
    }
  });
  return server;
}

/**
 * How many requests a POST body to a session counts as: one per message of a JSON-RPC batch that
 * the transport will take and answer (protocol revisions up to 2025-03-26 allow batches, and the
 * SDK negotiates those still), so a batch of N tool calls costs what N single calls do. Anything
 * else is one request: a single message, or a batch the transport refuses whole before anything
 * in it runs (over MAX_BATCH_SIZE messages, a malformed message, an initialize).
 */
function chargedMessages(body: unknown): number {
  if (!Array.isArray(body) || body.length < 2 || body.length > MAX_BATCH_SIZE) return 1;
  return body.every((message) => JSONRPCMessageSchema.safeParse(message).success) && !body.some(isInitializeRequest) ? body.length : 1;
}

function setLimitHeaders(ctx: Koa.Context, limit: Pick<LimitHeaders, 'limit' | 'remaining' | 'resetSeconds'>): void {
  ctx.set('X-RateLimit-Limit', `${limit.limit}`);
  ctx.set('X-RateLimit-Remaining', `${limit.remaining}`);
  ctx.set('X-RateLimit-Reset', `${limit.resetSeconds}`);
}

/**
 * Charges the further messages of a batch against both request buckets before any of them runs;
 * a batch that does not fit is answered 429 whole (with Retry-After), as a single request is.
 */
async function chargeBatch(deps: ServiceDependencies, ctx: Koa.Context, principal: Principal, limits: ApiLimits, messages: number, carriedSince: number): Promise<void> {
  try {
    setLimitHeaders(ctx, await deps.requests.budgets.admitBatch(principal, limits, messages, carriedSince));
  } catch (error) {
    if (error instanceof RateLimitError) setLimitHeaders(ctx, error.limit);
    throw error;
  }
}

/** Koa middleware for /mcp and /mcp/projects/{project_id}; other paths pass through. */
export function mcpMiddleware(deps: ServiceDependencies): Koa.Middleware {
  const sessions: Sessions = new Map();
  return async (ctx, next) => {
    const match = PATH.exec(ctx.path);
    if (!match) return next();
    const boundProjectId = match[1] ?? null;
    const carriedSince = deps.clock.now();
    const { principal, limits } = await authenticateBearer(deps, ctx);
    if (boundProjectId) await execute({ deps, principal, door: 'mcp', requestId: String(ctx.state.requestId ?? '') }, openProjectConnectionOperation, { projectId: boundProjectId });
    const sessionId = ctx.get('mcp-session-id');
    let session = sessionId ? sessions.get(sessionId) : undefined;
    if (sessionId && (!session || session.apiKeyId !== principal.apiKeyId || session.projectId !== boundProjectId)) {
      throw new NotFoundError('mcp_session', 'No MCP session with this id for this API key and connection; initialize a new one.');
    }
    // A batch needs a session (initialize comes alone): one without is refused by the transport.
    const body = (ctx.request as unknown as { body?: unknown }).body;
    const messages = session && ctx.method === 'POST' ? chargedMessages(body) : 1;
    if (messages > 1) await chargeBatch(deps, ctx, principal, limits, messages, carriedSince);
    if (!session) {
      if (ctx.method !== 'POST') throw new InputError('mcp_session_required', 'Initialize an MCP session with POST first.');
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, created);
        },
      });
      closeIdleSessions(sessions, deps.clock.now());
      const created: Session = { transport, apiKeyId: principal.apiKeyId, projectId: boundProjectId, lastSeenAt: deps.clock.now() };
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await buildServer(deps, boundProjectId).connect(transport);
      session = created;
    }
    // Tool calls authorize against the request that carries them (the SDK hands req.auth to the
    // handler): a key revoked or a member gone since initialize is noticed. Never the secret itself.
    session.lastSeenAt = deps.clock.now();
    const carrying: CarryingRequest = { principal, requestId: String(ctx.state.requestId ?? '') };
    (ctx.req as typeof ctx.req & { auth: AuthInfo }).auth = { token: '', clientId: principal.apiKeyId, scopes: [...principal.scopes], extra: carrying as unknown as Record<string, unknown> };
    ctx.respond = false;
    await session.transport.handleRequest(ctx.req, ctx.res, body);
  };
}
