import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { apiRoutes } from '../../api/routes';
import { SCOPES } from '../../core/scopes';
import { toolInputSchema, tools, ToolSpec } from '../../mcp/tools';
import { isPublic, Requirement, scopesOf } from '../../services/operations/operation';
import { createProject } from '../../services/tenancy/projects';
import { addMember, removeMember } from '../../services/tenancy/workspaces';
import { env } from '../support/environment';
import { newKey, newWorkspace, raiseRequestLimits, request } from '../support/fixtures';
import { sampleValue } from '../support/schema-samples';

// The access matrix of the MCP door, generated from the tools: each tool invokes an operation of
// the registry, and a key missing each of that operation's requirements in turn is refused with
// the code its HTTP route answers; a key holding exactly the requirement is let through.

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

  it('covers every tool, each invoking a keyed operation', () => {
    assert.ok(tools.length >= 14, `tools went missing: ${tools.length}`);
    assert.deepEqual(tools.filter((tool) => isPublic(tool.operation.access)).map((tool) => tool.name), []);
  });

  it('refuses a key missing the scopes, each scope of an all-of requirement in turn, with the HTTP route’s code', async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    const wrong: string[] = [];
    for (const tool of tools) {
      const required = scopesOf(access(tool).scopes);
      const keys = 'allOf' in access(tool).scopes
        ? required.map((missing) => exactScopes(tool).filter((s) => s !== missing))
        : [SCOPES.filter((s) => s !== 'org:manage' && !required.includes(s))];
      for (const scopes of keys) {
        const key = await newKey(ws, { scopes });
        const code = await callCode(key, tool, argumentsFor(tool, ws.projectId));
        if (code !== 'insufficient_scope') wrong.push(`${tool.name} with ${scopes.length} other scopes: ${code ?? 'admitted'}`);
        // The HTTP route of the same operation, if there is one, answers the same to the same key.
        const route = apiRoutes.find((r) => r.operation === tool.operation);
        if (route) {
          const path = route.path.replace(':project_id', ws.projectId).replace(/:([A-Za-z_]+)/g, () => randomUUID());
          const res = await request(route.method.toUpperCase(), path, { key, body: route.body ? sampleValue(route.body as Record<string, unknown>) : undefined });
          if (res.body?.code !== code) wrong.push(`${tool.name}: MCP ${code}, HTTP ${route.method.toUpperCase()} ${route.path} ${res.status} ${res.body?.code}`);
        }
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('refuses a project outside the key’s allowlist, a restricted key without shared resources, and a departed creator', async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    const other = await createProject(env().db, ws.workspaceId, { name: 'elsewhere' });
    const leaver = await addMember(env().db, ws.workspaceId, { name: 'leaver', role: 'admin' });
    const departedKeys = new Map<ToolSpec, string>();
    for (const tool of tools) departedKeys.set(tool, await newKey(ws, { scopes: exactScopes(tool) }, leaver.id));
    await removeMember(env().db, ws.workspaceId, leaver.id);
    const wrong: string[] = [];
    for (const tool of tools) {
      const rule = access(tool);
      const restrictable = exactScopes(tool).filter((s) => s !== 'org:manage');
      if (rule.project && restrictable.length) {
        const key = await newKey(ws, { scopes: restrictable, projectIds: [other.id], workspaceResources: true });
        const code = await callCode(key, tool, argumentsFor(tool, ws.projectId));
        const expected = rule.unrestrictedKey ? 'restricted_key' : 'project_denied';
        if (code !== expected) wrong.push(`${tool.name} outside the allowlist: ${code ?? 'admitted'}, expected ${expected}`);
      }
      if (rule.workspaceResources && restrictable.length) {
        const key = await newKey(ws, { scopes: restrictable, projectIds: [ws.projectId], workspaceResources: false });
        const code = await callCode(key, tool, argumentsFor(tool, ws.projectId));
        const expected = rule.unrestrictedKey ? 'restricted_key' : 'workspace_resources_denied';
        if (code !== expected) wrong.push(`${tool.name} without workspaceResources: ${code ?? 'admitted'}, expected ${expected}`);
      }
      if (rule.actor) {
        const code = await callCode(departedKeys.get(tool)!, tool, argumentsFor(tool, ws.projectId));
        if (code !== 'actor_not_accountable') wrong.push(`${tool.name} after its creator left: ${code ?? 'admitted'}`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it('admits a key holding exactly the operation’s requirement', async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    const wrong: string[] = [];
    for (const tool of tools) {
      const code = await callCode(await newKey(ws, { scopes: exactScopes(tool) }), tool, argumentsFor(tool, ws.projectId));
      if (code && ACCESS_CODES.has(code)) wrong.push(`${tool.name}: ${code}`);
    }
    assert.deepEqual(wrong, []);
  });
});
