import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { inputOf, responsesOf, type RouteSpec } from '../../../api/route-spec';
import { JsonSchema, validateWithSchema } from '../../../core/schema-validator';
import { SCOPES } from '../../../core/scopes';
import { actAs } from '../../../services/operations/act-as';
import { workerDependencies } from '../../../services/operations/context';
import { invoke } from '../../../services/operations/invoke';
import { principalOfKey } from '../../../services/tenancy/api-keys';
import { Operation, Requirement, scopesOf } from '../../../services/operations/operation';
import { operations } from '../../../services/operations/registry';
import { createProject } from '../../../services/tenancy/projects';
import { addMember, BootstrapResult, removeMember } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { coverageProblems, FLOORS, INTERNAL_OPERATIONS, internalOperations, keyedOperations, routesOf } from '../../support/doors';
import { sampleValue } from '../../support/schema-samples';
import {
  expireKey,
  HttpResponse,
  keyIdOf,
  newKey,
  newWorkspace,
  raiseRequestLimits,
  request,
  revokeKey,
  workspaceRows,
} from '../../support/fixtures';

/**
 * The authorization matrix: every keyed operation of the registry, through each of its HTTP routes
 * (new operations and routes join automatically), against every way a request can be refused,
 * each with its documented status and code, and no stored row changed by any refused request.
 * Operations without a route are covered by the MCP matrix (tools) or, for work acting later as its
 * key, by the activity matrix below; an operation no door reaches fails the coverage test.
 */
type KeyedRoute = RouteSpec;
const keyedRoutes: KeyedRoute[] = keyedOperations.flatMap(routesOf);
/** The operation's declared access: what every door enforces. */
const access = (route: KeyedRoute) => route.operation.access as Requirement;
/** A key holding exactly the requirement's scopes: every one of allOf, the first of anyOf. */
const exactScopes = (route: KeyedRoute): string[] => {
  const rule = access(route).scopes;
  return 'allOf' in rule ? [...rule.allOf] : [rule.anyOf[0]];
};
const label = (route: RouteSpec) => `${route.method.toUpperCase()} ${route.path}`;
const pathParams = (route: RouteSpec) => (route.path.match(/:([A-Za-z_]+)/g) ?? []).map((p) => p.slice(1));

/** Bodies for routes whose schema the generic sample builder cannot satisfy, by operationId. */
const SAMPLE_BODIES: Record<string, () => unknown> = {};

function sampleBody(route: RouteSpec): unknown {
  const { body } = inputOf(route);
  if (!body) return undefined;
  return SAMPLE_BODIES[route.operation.name]?.() ?? sampleValue(body);
}

/** One tenant for one case, plus a second tenant whose ids must stay invisible to the first. */
interface Tenants {
  ws: BootstrapResult;
  /** A second project of ws, for allowlists that exclude ws.projectId. */
  allowedProjectId: string;
  /** A key of ws that path parameters named key_id point at. */
  victimKeyId: string;
  other: BootstrapResult;
  otherKeyId: string;
}

async function tenants(): Promise<Tenants> {
  const [ws, other] = [await newWorkspace(), await newWorkspace()];
  // Many requests from one key: keep the request limits out of this test's way.
  await raiseRequestLimits(ws.workspaceId);
  await raiseRequestLimits(other.workspaceId);
  const allowed = await createProject(env().db, ws.workspaceId, { name: 'allowed' });
  const victimKeyId = await keyIdOf(await newKey(ws, { scopes: ['org:read'] }));
  const otherKeyId = await keyIdOf(await newKey(other, { scopes: ['org:read'] }));
  return { ws, allowedProjectId: allowed.id, victimKeyId, other, otherKeyId };
}

/** The route's path with ids of the given tenant: its project, its victim key, a fresh UUID for anything else. */
function pathFor(route: RouteSpec, ids: { projectId: string; keyId: string }): string {
  return route.path.replace(/:([A-Za-z_]+)/g, (_, name: string) => {
    if (name === 'project_id') return ids.projectId;
    if (name === 'key_id') return ids.keyId;
    // Other parameters get a well-formed value of their declared kind: ids are UUIDs, element names and release numbers are not.
    const schema = ((inputOf(route).params?.properties ?? {}) as Record<string, { format?: string; pattern?: string }>)[name];
    if (schema?.format === 'uuid' || !schema?.pattern) return randomUUID();
    return /\[1-9\]/.test(schema.pattern) ? '7' : `x${randomUUID().slice(0, 8)}`;
  });
}

interface Attempt {
  key?: string | null;
  headers?: Record<string, string>;
  ids?: { projectId: string; keyId: string };
  query?: string;
}

function send(route: RouteSpec, t: Tenants, attempt: Attempt): Promise<HttpResponse> {
  const path = pathFor(route, attempt.ids ?? { projectId: t.ws.projectId, keyId: t.victimKeyId }) + (attempt.query ?? '');
  return request(route.method.toUpperCase(), path, { key: attempt.key, headers: attempt.headers, body: sampleBody(route) });
}

/** Sends one request per route and collects every answer that is not the expected one. */
async function expectEach(
  routes: KeyedRoute[],
  expected: (route: KeyedRoute) => { status: number; code?: string },
  attempt: (route: KeyedRoute) => Promise<HttpResponse>,
): Promise<void> {
  assert.ok(routes.length > 0, 'no route to check: the matrix would pass on nothing');
  const wrong: string[] = [];
  for (const route of routes) {
    const want = expected(route);
    const res = await attempt(route);
    const code = (res.body as { code?: string } | undefined)?.code;
    if (res.status !== want.status || (want.code !== undefined && code !== want.code)) {
      wrong.push(`${label(route)}: expected ${want.status} ${want.code ?? ''}, got ${res.status} ${code ?? ''} ${(res.body as { message?: string })?.message ?? ''}`);
    }
  }
  assert.deepEqual(wrong, [], `unexpected answers:\n${wrong.join('\n')}`);
}

/** Runs the refused requests and proves that no stored row of either tenant changed. */
async function changesNothing(t: Tenants, work: () => Promise<void>): Promise<void> {
  const ids = [t.ws.workspaceId, t.other.workspaceId];
  const before = await workspaceRows(ids);
  await work();
  assert.deepEqual(await workspaceRows(ids), before, 'a refused request changed stored data');
}

/** The route's scopes without org:manage: what a project-restricted key can hold for it. */
const restrictableScopes = (route: KeyedRoute) => scopesOf(access(route).scopes).filter((s) => s !== 'org:manage');

describe('The authorization matrix', () => {
  it('covers every operation of the registry through a door, each keyed one through its routes, tools or an internal door', () => {
    assert.ok(operations.length >= FLOORS.operations, `the registry lost operations: ${operations.length}`);
    assert.deepEqual(coverageProblems(), []);
  });

  it('covers the keyed routes and builds a schema-valid sample body for each', () => {
    assert.ok(keyedRoutes.length >= FLOORS.keyedRoutes, `the matrix lost keyed routes: ${keyedRoutes.length}`);
    const invalid: string[] = [];
    for (const route of keyedRoutes.filter((r) => inputOf(r).body)) {
      try {
        validateWithSchema(inputOf(route).body as JsonSchema, structuredClone(sampleBody(route)), 'sample body');
      } catch (error) {
        invalid.push(`${label(route)} (${route.operation.name}): ${(error as Error).message}; add an entry to SAMPLE_BODIES`);
      }
    }
    assert.deepEqual(invalid, []);
  });

  it('answers 401 missing_credential without a key, and changes nothing', async () => {
    const t = await tenants();
    await changesNothing(t, () => expectEach(keyedRoutes, () => ({ status: 401, code: 'missing_credential' }), (route) => send(route, t, { key: null })));
  });

  it('answers 401 invalid_credential to malformed or unknown credentials, and changes nothing', async () => {
    const t = await tenants();
    const wellFormedUnknown = `weft_sk_${'A'.repeat(12)}_${'b'.repeat(43)}`;
    const headers = [
      'Bearer',
      'Bearer not-a-key',
      `Bearer ${wellFormedUnknown}`,
      `Bearer ${t.ws.apiKey.slice(0, -1)}${t.ws.apiKey.endsWith('A') ? 'B' : 'A'}`,
      `Bearer ${t.ws.apiKey} extra`,
      'Basic x',
      `Basic ${Buffer.from(`user:${t.ws.apiKey}`).toString('base64')}`,
      t.ws.apiKey,
    ];
    await changesNothing(t, async () => {
      for (const authorization of headers) {
        await expectEach(keyedRoutes, () => ({ status: 401, code: 'invalid_credential' }), (route) => send(route, t, { headers: { Authorization: authorization } }));
      }
    });
  });

  it('answers 401 invalid_credential to a revoked key holding the route’s scopes, and changes nothing', async () => {
    const t = await tenants();
    const keys = new Map<KeyedRoute, string>();
    for (const route of keyedRoutes) {
      const key = await newKey(t.ws, { scopes: exactScopes(route) });
      await revokeKey(key);
      keys.set(route, key);
    }
    await changesNothing(t, () => expectEach(keyedRoutes, () => ({ status: 401, code: 'invalid_credential' }), (route) => send(route, t, { key: keys.get(route) })));
  });

  it('answers 401 credential_expired to an expired key holding the route’s scopes, and changes nothing', async () => {
    const t = await tenants();
    const keys = new Map<KeyedRoute, string>();
    for (const route of keyedRoutes) {
      const key = await newKey(t.ws, { scopes: exactScopes(route) });
      await expireKey(key);
      keys.set(route, key);
    }
    await changesNothing(t, () => expectEach(keyedRoutes, () => ({ status: 401, code: 'credential_expired' }), (route) => send(route, t, { key: keys.get(route) })));
  });

  it('answers 403 insufficient_scope to a key holding every other scope except org:manage, and changes nothing', async () => {
    const t = await tenants();
    const keys = new Map<KeyedRoute, string>();
    for (const route of keyedRoutes) {
      keys.set(route, await newKey(t.ws, { scopes: SCOPES.filter((s) => s !== 'org:manage' && !scopesOf(access(route).scopes).includes(s)) }));
    }
    await changesNothing(t, () => expectEach(keyedRoutes, () => ({ status: 403, code: 'insufficient_scope' }), (route) => send(route, t, { key: keys.get(route) })));
  });

  it('answers 403 insufficient_scope to a key missing any one scope of an all-of requirement', async () => {
    const t = await tenants();
    const routes = keyedRoutes.filter((r) => 'allOf' in access(r).scopes);
    assert.ok(routes.length > 0, 'no operation needs several scopes at once (previewPipeline does)');
    const cases: Array<{ route: KeyedRoute; missing: string; key: string }> = [];
    for (const route of routes) {
      for (const missing of scopesOf(access(route).scopes)) cases.push({ route, missing, key: await newKey(t.ws, { scopes: exactScopes(route).filter((s) => s !== missing) }) });
    }
    const wrong: string[] = [];
    await changesNothing(t, async () => {
      for (const { route, missing, key } of cases) {
        const res = await send(route, t, { key });
        if (res.status !== 403 || res.body?.code !== 'insufficient_scope' || !res.body?.requiredScopes?.includes(missing)) wrong.push(`${label(route)} without ${missing}: ${res.status} ${JSON.stringify(res.body)}`);
      }
    });
    assert.deepEqual(wrong, []);
  });

  it('admits a key holding exactly the operation’s requirement: no access refusal on any keyed route', async () => {
    const t = await tenants();
    const accessCodes = new Set(['missing_credential', 'invalid_credential', 'credential_expired', 'insufficient_scope', 'restricted_key', 'project_denied', 'workspace_resources_denied', 'actor_not_accountable', 'actor_not_administrator']);
    const wrong: string[] = [];
    for (const route of keyedRoutes) {
      const res = await send(route, t, { key: await newKey(t.ws, { scopes: exactScopes(route) }) });
      if (accessCodes.has(res.body?.code) || res.status >= 500 && res.body?.code !== 'billing_unavailable') wrong.push(`${label(route)}: ${res.status} ${JSON.stringify(res.body)}`);
    }
    assert.deepEqual(wrong, []);
  });

  it('answers each GET route that needs no resource id with a body its declared response schema accepts', async () => {
    const t = await tenants();
    const wrong: string[] = [];
    let checked = 0;
    for (const route of keyedRoutes.filter((r) => r.method === 'get' && pathParams(r).every((p) => p === 'project_id'))) {
      const res = await send(route, t, { key: t.ws.apiKey });
      const answer = responsesOf(route)[200];
      const schema = answer?.schema;
      if (res.status !== 200 || !schema || JSON.stringify(schema).includes('$ref') || (answer?.contentType ?? 'application/json') !== 'application/json') continue;
      checked += 1;
      try {
        validateWithSchema(schema as JsonSchema, structuredClone(res.body), 'response body');
      } catch (error) {
        wrong.push(`${label(route)}: ${(error as Error).message}`);
      }
    }
    assert.ok(checked >= 15, `only ${checked} routes answered 200 to compare`);
    assert.deepEqual(wrong, [], 'a generated client would misread these answers');
  });

  it('answers 403 project_denied for a project outside the key’s allowlist, and changes nothing', async () => {
    const t = await tenants();
    const routes = keyedRoutes.filter((r) => access(r).project && restrictableScopes(r).length > 0);
    assert.ok(routes.length > 0);
    const keys = new Map<KeyedRoute, string>();
    for (const route of routes) {
      keys.set(route, await newKey(t.ws, { scopes: restrictableScopes(route), projectIds: [t.allowedProjectId], workspaceResources: true }));
    }
    await changesNothing(t, () => expectEach(
      routes,
      (route) => ({ status: 403, code: access(route).unrestrictedKey ? 'restricted_key' : 'project_denied' }),
      (route) => send(route, t, { key: keys.get(route), ids: { projectId: t.ws.projectId, keyId: t.victimKeyId } }),
    ));
  });

  it('answers 403 restricted_key to a project-restricted key where only unrestricted keys may act, and changes nothing', async () => {
    const t = await tenants();
    const routes = keyedRoutes.filter((r) => access(r).unrestrictedKey);
    assert.ok(routes.length > 0);
    const keys = new Map<KeyedRoute, string>();
    for (const route of routes) {
      if (restrictableScopes(route).length > 0) {
        keys.set(route, await newKey(t.ws, { scopes: restrictableScopes(route), projectIds: [t.allowedProjectId], workspaceResources: true }));
      } else {
        // org:manage cannot be restricted through the API; force the state to prove the layer holds anyway.
        const key = await newKey(t.ws, { scopes: exactScopes(route) });
        await env().db('api_keys').where({ id: await keyIdOf(key) }).update({ projectIds: env().db.raw('ARRAY[?]::uuid[]', [t.allowedProjectId]) });
        keys.set(route, key);
      }
    }
    await changesNothing(t, () => expectEach(routes, () => ({ status: 403, code: 'restricted_key' }), (route) => send(route, t, {
      key: keys.get(route),
      ids: { projectId: t.allowedProjectId, keyId: t.victimKeyId },
    })));
  });

  it('answers 403 workspace_resources_denied to a restricted key without workspaceResources on shared-resource routes, and changes nothing', async function () {
    const t = await tenants();
    const routes = keyedRoutes.filter((r) => access(r).workspaceResources && restrictableScopes(r).length > 0);
    if (routes.length === 0) this.skip();
    const keys = new Map<KeyedRoute, string>();
    for (const route of routes) {
      keys.set(route, await newKey(t.ws, { scopes: restrictableScopes(route), projectIds: [t.allowedProjectId], workspaceResources: false }));
    }
    await changesNothing(t, () => expectEach(
      routes,
      (route) => ({ status: 403, code: access(route).unrestrictedKey ? 'restricted_key' : 'workspace_resources_denied' }),
      (route) => send(route, t, { key: keys.get(route), ids: { projectId: t.allowedProjectId, keyId: t.victimKeyId } }),
    ));
  });

  it('answers 403 actor_not_accountable on state-changing routes once the key’s creator has left, and changes nothing', async () => {
    const t = await tenants();
    const member = await addMember(env().db, t.ws.workspaceId, { name: 'leaver', role: 'admin' });
    const keys = new Map<KeyedRoute, string>();
    for (const route of keyedRoutes) keys.set(route, await newKey(t.ws, { scopes: exactScopes(route) }, member.id));
    await removeMember(env().db, t.ws.workspaceId, member.id);
    const routes = keyedRoutes.filter((r) => access(r).actor !== undefined);
    assert.ok(routes.length > 0);
    await changesNothing(t, () => expectEach(routes, () => ({ status: 403, code: 'actor_not_accountable' }), (route) => send(route, t, { key: keys.get(route) })));
    // The same keys still authenticate and read where no accountable actor is needed.
    const reads = keyedRoutes.filter((r) => access(r).actor === undefined && r.method === 'get');
    for (const route of reads) {
      const res = await send(route, t, { key: keys.get(route) });
      // Billing routes answer their documented 503 while no Stripe key is configured.
      const documented = res.status === 503 && (res.body as { code?: string }).code === 'billing_unavailable';
      assert.ok(res.status !== 401 && res.status !== 403 && (res.status < 500 || documented), `${label(route)}: ${res.status} ${JSON.stringify(res.body)}`);
    }
  });

  it('answers 404 to ids of another workspace, even for a key that may do everything, and changes nothing', async () => {
    const t = await tenants();
    const routes = keyedRoutes.filter((r) => pathParams(r).length > 0);
    assert.ok(routes.length > 0);
    await changesNothing(t, () => expectEach(routes, () => ({ status: 404, code: 'not_found' }), (route) => send(route, t, {
      key: t.ws.apiKey,
      ids: { projectId: t.other.projectId, keyId: t.otherKeyId },
    })));
  });

  it('refuses 400 credential_in_url to a key anywhere in the URL, before authenticating, and changes nothing', async () => {
    const t = await tenants();
    const queries = [`?api_key=${t.ws.apiKey}`, `?access_token=${t.ws.apiKey}`, `?note=${encodeURIComponent(t.ws.apiKey)}`, `?limit=5&x=${t.ws.apiKey}`, `?${t.ws.apiKey}`];
    await changesNothing(t, async () => {
      for (const query of queries) {
        // With and without a proper header: a key in the URL is refused either way.
        await expectEach(keyedRoutes, () => ({ status: 400, code: 'credential_in_url' }), (route) => send(route, t, { key: t.ws.apiKey, query }));
        await expectEach(keyedRoutes, () => ({ status: 400, code: 'credential_in_url' }), (route) => send(route, t, { key: null, query }));
      }
    });
    // In the path too (where it would otherwise reach the request log), plain or percent-encoded.
    await changesNothing(t, async () => {
      for (const encode of [(k: string) => k, (k: string) => k.replace(/_/g, '%5F')]) {
        await expectEach(keyedRoutes, () => ({ status: 400, code: 'credential_in_url' }), (route) => {
          const path = pathParams(route).length ? route.path.replace(/:([A-Za-z_]+)/, encode(t.ws.apiKey)).replace(/:([A-Za-z_]+)/g, randomUUID()) : `${route.path}/${encode(t.ws.apiKey)}`;
          return request(route.method.toUpperCase(), path, { key: t.ws.apiKey, body: sampleBody(route) });
        });
      }
    });
    // Refused before authentication: nothing counted the key's use, and it still works (the user should rotate it).
    const stillWorks = await request('GET', '/api/v1/organization', { key: t.ws.apiKey });
    assert.equal(stillWorks.status, 200);
  });

  it('documents every keyed route in GET /api/v1/openapi.json with its scopes and 401, 403 and 429 answers', async () => {
    const res = await request('GET', '/api/v1/openapi.json');
    assert.equal(res.status, 200);
    const missing: string[] = [];
    for (const route of keyedRoutes) {
      const operation = res.body.paths[route.path.replace(/:([A-Za-z_]+)/g, '{$1}')]?.[route.method];
      if (!operation) {
        missing.push(`${label(route)}: not in the document`);
        continue;
      }
      if (JSON.stringify(operation['x-weft-scopes']) !== JSON.stringify(scopesOf(access(route).scopes))) missing.push(`${label(route)}: x-weft-scopes ${JSON.stringify(operation['x-weft-scopes'])}`);
      for (const status of ['401', '403', '429']) {
        if (!operation.responses?.[status]) missing.push(`${label(route)}: no ${status} response`);
      }
      if (!operation.responses?.['429']?.headers?.['Retry-After']) missing.push(`${label(route)}: 429 without Retry-After`);
      if (pathParams(route).length && !operation.responses?.['404']) missing.push(`${label(route)}: no 404 response`);
    }
    assert.deepEqual(missing, []);
  });
});

/**
 * The door of work that runs later as its key (actAs): each internal operation, acted as a key
 * that its declared access refuses, is refused with the code a request would get. The work itself
 * (that the refusal is recorded on the job, run or write action) is in test/integration/api/access-audit.test.ts
 * and test/integration/api/access-holes.test.ts.
 */
describe('The access matrix of work acting as its key', () => {
  // Work acting as its key (activities) and the operations the SPARQL protocol hands a request to.
  const activityOperations = [...internalOperations('activity'), ...internalOperations('sparql')];
  const activityAccess = (operation: Operation) => operation.access as Requirement;
  const exact = (operation: Operation): string[] => {
    const rule = activityAccess(operation).scopes;
    return 'allOf' in rule ? [...rule.allOf] : [rule.anyOf[0]];
  };

  /** The refusal code of acting as this key, or 'admitted' when the access layers let it through. */
  async function refusal(key: string, workspaceId: string, operation: Operation, projectId: string): Promise<string> {
    const input = { projectId, jobId: randomUUID(), runId: randomUUID(), scheduleId: randomUUID(), writeActionId: randomUUID() };
    try {
      // A key the access admits would go on to the work itself: stop it at the first database read.
      if (INTERNAL_OPERATIONS[operation.name].door === 'sparql') {
        const principal = await principalOfKey(env(), env().db, workspaceId, await keyIdOf(key));
        await invoke({ deps: workerDependencies(env()), principal, door: 'sparql', requestId: `matrix:${operation.name}` }, operation, { projectId, text: 'ASK {}', sentAsQuery: false });
      } else {
        const apiKeyId = await keyIdOf(key);
        const { createdByMemberId } = await env().db('apiKeys').where({ id: apiKeyId }).first('createdByMemberId');
        await actAs(workerDependencies(env()), { workspaceId, memberId: createdByMemberId, apiKeyId }, `matrix:${operation.name}`, operation, input);
      }
      return 'admitted';
    } catch (error) {
      return (error as { code?: string }).code ?? `unexpected ${(error as Error).message}`;
    }
  }

  it('refuses each internal operation to keys missing its scopes, its project, shared resources or an accountable actor', async () => {
    assert.ok(activityOperations.length >= 7, `internal operations went missing: ${activityOperations.map((o) => o.name).join(', ')}`);
    const t = await tenants();
    const leaver = await addMember(env().db, t.ws.workspaceId, { name: 'leaver', role: 'admin' });
    const cases: Array<{ operation: Operation; label: string; key: string; code: string }> = [];
    for (const operation of activityOperations) {
      const rule = activityAccess(operation);
      const required = scopesOf(rule.scopes);
      const add = (label: string, key: string, code: string) => cases.push({ operation, label, key, code });
      add('without its scopes', await newKey(t.ws, { scopes: SCOPES.filter((s) => s !== 'org:manage' && !required.includes(s)) }), 'insufficient_scope');
      if ('allOf' in rule.scopes && required.length > 1) {
        for (const missing of required) add(`without ${missing}`, await newKey(t.ws, { scopes: exact(operation).filter((s) => s !== missing) }), 'insufficient_scope');
      }
      const revoked = await newKey(t.ws, { scopes: exact(operation) });
      await revokeKey(revoked);
      add('revoked', revoked, 'credential_revoked');
      const restrictable = exact(operation).filter((s) => s !== 'org:manage');
      if (rule.project) add('outside the allowlist', await newKey(t.ws, { scopes: restrictable, projectIds: [t.allowedProjectId], workspaceResources: true }), 'project_denied');
      if (rule.workspaceResources) add('without workspaceResources', await newKey(t.ws, { scopes: restrictable, projectIds: [t.ws.projectId], workspaceResources: false }), 'workspace_resources_denied');
      if (rule.actor) add('after its creator left', await newKey(t.ws, { scopes: exact(operation) }, leaver.id), 'actor_not_accountable');
    }
    await removeMember(env().db, t.ws.workspaceId, leaver.id);
    const wrong: string[] = [];
    await changesNothing(t, async () => {
      for (const { operation, label, key, code } of cases) {
        const got = await refusal(key, t.ws.workspaceId, operation, t.ws.projectId);
        if (got !== code) wrong.push(`${operation.name} ${label}: ${got}, expected ${code}`);
      }
    });
    assert.deepEqual(wrong, []);
    assert.ok(cases.some((c) => c.code === 'actor_not_accountable') && cases.some((c) => c.code === 'project_denied') && cases.some((c) => c.code === 'workspace_resources_denied'), 'every layer was tried on some operation');
  });
});
