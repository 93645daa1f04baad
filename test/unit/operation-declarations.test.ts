import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { allRoutes } from '../../api/app';
import { buildOpenApiDocument } from '../../api/openapi';
import { defineRoute, RouteSpec } from '../../api/route-spec';
import { apiRoutes } from '../../api/routes';
import { projectRoot } from '../../core/paths';
import type { JsonSchema } from '../../core/schema-validator';
import { isScope } from '../../core/scopes';
import { tools } from '../../mcp/tools';
import { defineOperation, isPublic, scopesOf } from '../../services/operations/operation';
import { operations, operationsByName } from '../../services/operations/registry';

const label = (route: RouteSpec) => `${route.method.toUpperCase()} ${route.path}`;
const pathParams = (route: RouteSpec) => (route.path.match(/:([A-Za-z_]+)/g) ?? []).map((p) => p.slice(1));
const publicRoute = (route: RouteSpec) => isPublic(route.operation.access);

/**
 * POST routes that only read (checks, validations, query executions) may go without an accountable
 * actor; every other non-GET route changes state and must declare one (SPEC 5.1). Add an
 * operation name here only with the reason.
 */
const NON_MUTATING_POSTS: Record<string, string> = {
  validateDataEndpoint: 'validates a stored endpoint against its capability contract; stores nothing (SPEC 4.4: read scope as applicable)',
  executeQuery: 'executes a published release for a consumer: reads data, changes none (SPEC 4.5)',
  executeOntologyQuery: 'the alias of executeQuery',
};

/** Words that state an access rule. A door (api/, mcp/) that contains one restates what an operation declares. */
const ACCESS_RULE = /\b(hasScope|authorize|authorizeProject|missingReadPermissions|requireProject|admitKey)\(|\b(insufficient_scope|accountableActor|administratorActor|projectParam)\b|\bscopes\s*:\s*\{\s*(anyOf|allOf)/;

function sourceFiles(folder: string): string[] {
  return readdirSync(path.join(projectRoot, folder), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(folder, file));
}

/** The properties of a declaration: a door declares transport only. */
const declaredKeys = (value: object): string[] => Object.keys(value);

describe('Operation declarations', () => {
  it('the registry holds every operation once, each with an access requirement of known scopes', () => {
    assert.ok(operations.length >= 90, `the registry lost operations: ${operations.length}`);
    const names = operations.map((operation) => operation.name);
    assert.deepEqual(names.filter((name, i) => names.indexOf(name) !== i), [], 'operation names are unique');
    const problems: string[] = [];
    for (const operation of operations) {
      const access = operation.access as unknown as Record<string, unknown> | undefined;
      if (!access) problems.push(`${operation.name}: no access`);
      else if (isPublic(operation.access)) {
        if (typeof operation.access.public !== 'string' || operation.access.public.trim().length < 5) problems.push(`${operation.name}: public without a reason`);
      } else {
        const rule = operation.access.scopes as unknown as Record<string, unknown>;
        const listed = rule && (Array.isArray(rule.anyOf) ? rule.anyOf : rule.allOf);
        if (!Array.isArray(listed) || listed.length === 0 || Object.keys(rule).length !== 1) problems.push(`${operation.name}: scopes must be exactly one non-empty anyOf or allOf`);
        else for (const scope of listed) if (typeof scope !== 'string' || !isScope(scope)) problems.push(`${operation.name}: unknown scope ${String(scope)}`);
      }
      if (operation.idempotent && operation.effect !== 'write') problems.push(`${operation.name}: idempotency records live in the operation's transaction, so only writes may be idempotent`);
    }
    assert.deepEqual(problems, []);
  });

  it('an operation without a valid access declaration does not compile', () => {
    // The type checker (npm test runs it first) fails the build if these stop being errors.
    // @ts-expect-error access is required
    defineOperation({ name: 'x', summary: 'x', effect: 'read', run: async () => ({}) });
    // @ts-expect-error scopes state anyOf or allOf, not a bare list
    defineOperation({ name: 'x', summary: 'x', effect: 'read', access: { scopes: ['org:read'] }, run: async () => ({}) });
    // @ts-expect-error scopes are checked against the scope list
    defineOperation({ name: 'x', summary: 'x', effect: 'read', access: { scopes: { anyOf: ['org:mange'] } }, run: async () => ({}) });
    // @ts-expect-error a route has no access rule of its own
    defineRoute({ method: 'get', path: '/x', tag: 'x', operation: operations[0], auth: { scopes: ['org:read'] }, responses: {} });
  });

  it('every route and every MCP tool invokes an operation of the registry and states no access rule of its own', () => {
    const problems: string[] = [];
    for (const route of allRoutes()) {
      if (operationsByName.get(route.operation?.name) !== route.operation) problems.push(`${label(route)}: its operation is not in the registry`);
      const own = declaredKeys({ ...route, operation: undefined }).filter((key) => ['auth', 'access', 'scopes', 'handler', 'projectParam', 'accountableActor'].includes(key));
      if (own.length) problems.push(`${label(route)}: declares ${own.join(', ')}`);
    }
    for (const tool of tools) {
      if (operationsByName.get(tool.operation?.name) !== tool.operation) problems.push(`tool ${tool.name}: its operation is not in the registry`);
      const own = declaredKeys({ ...tool, operation: undefined }).filter((key) => ['auth', 'access', 'scopes', 'handler', 'project'].includes(key));
      if (own.length) problems.push(`tool ${tool.name}: declares ${own.join(', ')}`);
    }
    assert.deepEqual(problems, []);
  });

  it('no door states an access rule in its code, and mcp/ imports nothing from api/', () => {
    const problems: string[] = [];
    for (const file of [...sourceFiles('api'), ...sourceFiles('mcp')]) {
      const text = readFileSync(path.join(projectRoot, file), 'utf8');
      text.split('\n').forEach((line, index) => {
        if (ACCESS_RULE.test(line) && !line.trim().startsWith('//') && !line.trim().startsWith('*')) problems.push(`${file}:${index + 1}: ${line.trim()}`);
      });
      if (file.startsWith('mcp') && /from '\.\.\/api\//.test(text)) problems.push(`${file}: imports from api/`);
    }
    assert.deepEqual(problems, []);
  });

  it('only health probes, the API description, pricing and the billing callback are public (SPEC 5.1, 6)', () => {
    const unexpected = allRoutes()
      .filter(publicRoute)
      .filter((r) => !r.internal && !(r.method === 'get' && r.path === '/api/v1/pricing') && !(r.method === 'post' && /^\/api\/v1\/billing\/.*webhook$/.test(r.path)))
      .map(label);
    assert.deepEqual(unexpected, [], 'a new public route must be a deliberate, reviewed exception');
    assert.deepEqual(tools.filter((tool) => isPublic(tool.operation.access)).map((tool) => tool.name), [], 'every tool acts as a key');
  });

  it('method-path pairs are unique, and two routes share an operation only as declared aliases', () => {
    const pairs = allRoutes().map(label);
    assert.deepEqual(pairs.filter((p, i) => pairs.indexOf(p) !== i), []);
    // Internal routes (static pages and assets) share the one static-content operation.
    const names = allRoutes().filter((r) => !r.internal).map((r) => r.operation.name);
    assert.deepEqual(names.filter((name, i) => names.indexOf(name) !== i), []);
  });

  it('versioned API paths start with /api/v1 and every other path is internal', () => {
    for (const route of allRoutes()) {
      if (!route.path.startsWith('/api/v1/')) assert.ok(route.internal, `${label(route)} is outside /api/v1 but not internal`);
    }
    for (const route of apiRoutes.filter((r) => !publicRoute(r))) {
      assert.ok(route.path.startsWith('/api/v1/'), `${label(route)} must be under /api/v1`);
      assert.ok(!route.internal, `${label(route)} needs a key, so it belongs in the OpenAPI document`);
    }
  });

  it('every path parameter is validated, and every *_id parameter is a UUID', () => {
    const problems: string[] = [];
    for (const route of allRoutes()) {
      const names = pathParams(route);
      if (names.length === 0) continue;
      const properties = (route.params?.properties ?? {}) as Record<string, JsonSchema>;
      const required = new Set((route.params?.required as string[] | undefined) ?? []);
      for (const name of names) {
        if (!properties[name] || !required.has(name)) problems.push(`${label(route)}: :${name} is not a required property of params`);
        else if (name.endsWith('_id') && properties[name].format !== 'uuid') problems.push(`${label(route)}: :${name} is not format uuid`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('an operation that names a project is reached by routes whose path names it', () => {
    for (const route of apiRoutes) {
      const access = route.operation.access;
      if (isPublic(access) || !access.project) continue;
      assert.ok(pathParams(route).includes('project_id') || route.input, `${label(route)}: the operation needs a project, and neither the path nor the route's input mapping gives one`);
    }
  });

  it('every state-changing route invokes an operation that needs an accountable actor', () => {
    const missing = apiRoutes
      .filter((r) => !publicRoute(r) && r.method !== 'get' && !NON_MUTATING_POSTS[r.operation.name])
      .filter((r) => { const access = r.operation.access; return isPublic(access) || !access.actor; })
      .map(label);
    assert.deepEqual(missing, []);
  });

  it('Idempotency-Key is offered on write operations only, never by GET routes or key creation', () => {
    for (const route of allRoutes().filter((r) => r.operation.idempotent)) {
      assert.notEqual(route.method, 'get', `${label(route)} is idempotent by nature`);
      assert.ok(!publicRoute(route), `${label(route)}: idempotency records are scoped to a key`);
      assert.equal(route.operation.effect, 'write', `${label(route)}: Idempotency-Key needs the operation's transaction`);
    }
    const createKey = apiRoutes.find((r) => r.operation.name === 'createApiKey');
    assert.ok(createKey && !createKey.operation.idempotent, 'the spec gives key creation no idempotency contract');
  });

  it('every route declares a success response', () => {
    for (const route of allRoutes()) {
      assert.ok(Object.keys(route.responses).some((s) => Number(s) >= 200 && Number(s) < 300), `${label(route)} declares no 2xx response`);
    }
  });

  it('the OpenAPI document lists every keyed route with its operation’s scopes and its 401, 403 and 429 answers', () => {
    const document = buildOpenApiDocument(apiRoutes, { version: 'test' }) as { paths: Record<string, Record<string, any>> };
    for (const route of apiRoutes.filter((r) => !publicRoute(r))) {
      const operation = document.paths[route.path.replace(/:([A-Za-z_]+)/g, '{$1}')]?.[route.method];
      assert.ok(operation, `${label(route)} is missing from the OpenAPI document`);
      const access = route.operation.access;
      if (isPublic(access)) continue;
      assert.equal(operation.operationId, route.operation.name);
      assert.deepEqual(operation['x-weft-scopes'], scopesOf(access.scopes));
      assert.deepEqual(operation['x-weft-access'], access);
      for (const status of ['401', '403', '429']) assert.ok(operation.responses[status], `${label(route)} does not document ${status}`);
      if (pathParams(route).length) assert.ok(operation.responses['404'], `${label(route)} does not document 404`);
      if (route.body || route.query || route.params) assert.ok(operation.responses['422'], `${label(route)} does not document 422`);
    }
  });
});
