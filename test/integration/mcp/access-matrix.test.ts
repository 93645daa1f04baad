import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { inputOf, type RouteSpec } from '../../../api/route-spec';
import { SCOPES } from '../../../core/scopes';
import { toolInputSchema, tools, ToolSpec } from '../../../mcp/tools';
import { Requirement, scopesOf } from '../../../services/operations/operation';
import { createProject } from '../../../services/tenancy/projects';
import { addMember, removeMember } from '../../../services/tenancy/workspaces';
import { coverageProblems, FLOORS, internalOperations, keyedOperations, routesOf, toolsOf } from '../../support/doors';
import { env } from '../../support/environment';
import { newKey, newWorkspace, raiseRequestLimits, request } from '../../support/fixtures';
import { sampleValue } from '../../support/schema-samples';

// The access matrix of the MCP door, generated from the registry: every operation a tool invokes,
// through each of its tools, and a key missing each of that operation's requirements in turn is
// refused with the code its HTTP route answers to the same key; a key holding exactly the
// requirement is let through. Operations that neither a route nor a tool reaches are internal by
// name (test/support/doors.ts).

const matrixTools: ToolSpec[] = keyedOperations.flatMap(toolsOf);

const ACCESS_CODES = new Set(['insufficient_scope', 'restricted_key', 'project_denied', 'workspace_resources_denied', 'actor_not_accountable', 'actor_not_administrator']);
const access = (tool: ToolSpec) => tool.operation.access as Requirement;
const exactScopes = (tool: ToolSpec): string[] => {
  const rule = access(tool).scopes;
  return 'allOf' in rule ? [...rule.allOf] : [rule.anyOf[0]];
};

async function connect(key: string): Promise<Client> {
  const client = new Client({ name: 'weft-access-matrix', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${env().baseUrl}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${key}` } } }));
  return client;
}

/** Schema-valid arguments for a tool on a workspace connection, in the given project. */
function argumentsFor(tool: ToolSpec, projectId: string): Record<string, unknown> {
  const args = sampleValue(toolInputSchema(tool, false) as Record<string, unknown>) as Record<string, unknown>;
  if ('projectId' in args) args.projectId = projectId;
  if ('idempotencyKey' in args) args.idempotencyKey = `matrix-${randomUUID()}`;
  return args;
}

/** The code the operation's HTTP route answers this key, for the same project (other ids fresh). */
async function httpCode(route: RouteSpec, key: string, projectId: string): Promise<string | undefined> {
  const path = route.path.replace(':project_id', projectId).replace(/:([A-Za-z_]+)/g, () => randomUUID());
  const res = await request(route.method.toUpperCase(), path, { key, body: inputOf(route).body ? sampleValue(inputOf(route).body as Record<string, unknown>) : undefined });
  return res.body?.code;
}

/** The tool's refusal code, or undefined when it was not refused for access. */
async function callCode(key: string, tool: ToolSpec, args: Record<string, unknown>): Promise<string | undefined> {
  const client = await connect(key);
  try {
    const result = (await client.callTool({ name: tool.name, arguments: args })) as { isError?: boolean; structuredContent?: { code?: string } };
    return result.isError ? result.structuredContent?.code : undefined;
  } finally {
    await client.close();
  }
}

describe('The MCP access matrix, generated from the tools’ operations', function () {
  this.timeout(180_000);

  it('covers every operation a tool invokes, and every tool; each operation without a route has a tool or is internal by name', () => {
    assert.ok(matrixTools.length >= FLOORS.tools, `tools went missing: ${matrixTools.length}`);
    assert.deepEqual(tools.filter((tool) => !matrixTools.includes(tool)).map((tool) => tool.name), [], 'a tool invokes an operation that is not a keyed operation of the registry');
    assert.deepEqual(coverageProblems(), []);
    const routeless = keyedOperations.filter((operation) => routesOf(operation).length === 0);
    assert.deepEqual(routeless.filter((operation) => toolsOf(operation).length === 0 && !internalOperations('activity').includes(operation) && !internalOperations('sparql').includes(operation) && !internalOperations('mcp-connection').includes(operation) && !internalOperations('console').includes(operation)).map((o) => o.name), []);
  });

  it('refuses to open a project-bound connection outside the key’s allowlist, as the project routes do', async () => {
    assert.deepEqual(internalOperations('mcp-connection').map((operation) => operation.name), ['openProjectConnection']);
    const ws = await newWorkspace();
    const other = await createProject(env().db, ws.workspaceId, { name: 'elsewhere' });
    const key = await newKey(ws, { scopes: ['pipelines:read'], projectIds: [other.id] });
    const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'matrix', version: '1' } } };
    const res = await request('POST', `/mcp/projects/${ws.projectId}`, { key, body: initialize, headers: { Accept: 'application/json, text/event-stream' } });
    assert.equal(res.status, 403, JSON.stringify(res.body));
    assert.equal(res.body.code, 'project_denied');
    const http = await request('GET', `/api/v1/projects/${ws.projectId}/pipelines`, { key });
    assert.equal(http.body.code, 'project_denied');
  });

  it('refuses a key missing the scopes, each scope of an all-of requirement in turn, with the HTTP route’s code', async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    const wrong: string[] = [];
    for (const tool of matrixTools) {
      const required = scopesOf(access(tool).scopes);
      const keys = 'allOf' in access(tool).scopes
        ? required.map((missing) => exactScopes(tool).filter((s) => s !== missing))
        : [SCOPES.filter((s) => s !== 'org:manage' && !required.includes(s))];
      for (const scopes of keys) {
        const key = await newKey(ws, { scopes });
        const code = await callCode(key, tool, argumentsFor(tool, ws.projectId));
        if (code !== 'insufficient_scope') wrong.push(`${tool.name} with ${scopes.length} other scopes: ${code ?? 'admitted'}`);
        // The HTTP routes of the same operation, if there are any, answer the same to the same key.
        for (const route of routesOf(tool.operation)) {
          const http = await httpCode(route, key, ws.projectId);
          if (http !== code) wrong.push(`${tool.name}: MCP ${code}, HTTP ${route.method.toUpperCase()} ${route.path} ${http}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('refuses a project outside the key’s allowlist, a restricted key without shared resources, and a departed creator, with the HTTP route’s code', async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    const other = await createProject(env().db, ws.workspaceId, { name: 'elsewhere' });
    const leaver = await addMember(env().db, ws.workspaceId, { name: 'leaver', role: 'admin' });
    const departedKeys = new Map<ToolSpec, string>();
    for (const tool of matrixTools) departedKeys.set(tool, await newKey(ws, { scopes: exactScopes(tool) }, leaver.id));
    await removeMember(env().db, ws.workspaceId, leaver.id);
    const wrong: string[] = [];
    const tried = new Set<string>();
    /** The tool's code for this key, and every HTTP route of its operation answering the same. */
    const check = async (tool: ToolSpec, label: string, key: string, expected: string) => {
      tried.add(expected);
      const code = await callCode(key, tool, argumentsFor(tool, ws.projectId));
      if (code !== expected) wrong.push(`${tool.name} ${label}: ${code ?? 'admitted'}, expected ${expected}`);
      for (const route of routesOf(tool.operation)) {
        const http = await httpCode(route, key, ws.projectId);
        if (http !== code) wrong.push(`${tool.name} ${label}: MCP ${code ?? 'admitted'}, HTTP ${route.method.toUpperCase()} ${route.path} ${http}`);
      }
    };
    for (const tool of matrixTools) {
      const rule = access(tool);
      const restrictable = exactScopes(tool).filter((s) => s !== 'org:manage');
      if (rule.project && restrictable.length) {
        const key = await newKey(ws, { scopes: restrictable, projectIds: [other.id], workspaceResources: true });
        await check(tool, 'outside the allowlist', key, rule.unrestrictedKey ? 'restricted_key' : 'project_denied');
      }
      if (rule.workspaceResources && restrictable.length) {
        const key = await newKey(ws, { scopes: restrictable, projectIds: [ws.projectId], workspaceResources: false });
        await check(tool, 'without workspaceResources', key, rule.unrestrictedKey ? 'restricted_key' : 'workspace_resources_denied');
      }
      if (rule.actor) await check(tool, 'after its creator left', departedKeys.get(tool)!, 'actor_not_accountable');
    }
    assert.deepEqual(wrong, []);
    assert.deepEqual([...tried].sort(), ['actor_not_accountable', 'project_denied', 'workspace_resources_denied'], 'every layer was compared on some tool');
  });

  it('admits a key holding exactly the operation’s requirement', async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    const wrong: string[] = [];
    for (const tool of matrixTools) {
      const code = await callCode(await newKey(ws, { scopes: exactScopes(tool) }), tool, argumentsFor(tool, ws.projectId));
      if (code && ACCESS_CODES.has(code)) wrong.push(`${tool.name}: ${code}`);
    }
    assert.deepEqual(wrong, []);
  });
});
