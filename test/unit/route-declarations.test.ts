import assert from 'node:assert/strict';
import { allRoutes } from '../../api/app';
import { buildOpenApiDocument } from '../../api/openapi';
import { defineRoute, RouteSpec } from '../../api/route-spec';
import { apiRoutes } from '../../api/routes';
import type { JsonSchema } from '../../core/schema-validator';
import { isScope } from '../../core/scopes';

const label = (route: RouteSpec) => `${route.method.toUpperCase()} ${route.path}`;
const pathParams = (route: RouteSpec) => (route.path.match(/:([A-Za-z_]+)/g) ?? []).map((p) => p.slice(1));
const isPublic = (route: RouteSpec) => 'public' in route.auth;

/**
 * POST routes that only read (checks, validations, query executions) may go without an accountable
 * actor; every other non-GET route changes state and must declare one (SPEC 5.1). Add an
 * operationId here only with the reason.
 */
const NON_MUTATING_POSTS: Record<string, string> = {
  validateDataEndpoint: 'validates a stored endpoint against its capability contract; stores nothing (SPEC 4.4: read scope as applicable)',
  executeQuery: 'executes a published release for a consumer: reads data, changes none (SPEC 4.5)',
  executeOntologyQuery: 'the alias of executeQuery',
};

describe('Route declarations', () => {
  it('a route without an auth declaration does not compile', () => {
    // The type checker (npm test runs it first) fails the build if these stop being errors.
    // @ts-expect-error auth is required on every route
    const noAuth: RouteSpec = { method: 'get', path: '/x', operationId: 'x', summary: 'x', tag: 'x', responses: {}, handler: async () => ({}) };
    // @ts-expect-error an empty auth object is neither public nor a scope requirement
    defineRoute({ method: 'get', path: '/x', operationId: 'x', summary: 'x', tag: 'x', auth: {}, responses: {}, handler: async () => ({}) });
    // @ts-expect-error a public route must say why
    defineRoute({ method: 'get', path: '/x', operationId: 'x', summary: 'x', tag: 'x', auth: { public: true }, responses: {}, handler: async () => ({}) });
    // @ts-expect-error scopes are checked against the scope list
    defineRoute({ method: 'get', path: '/x', operationId: 'x', summary: 'x', tag: 'x', auth: { scopes: ['org:mange'] }, responses: {}, handler: async () => ({}) });
    assert.ok(noAuth);
  });

  it('every route declares auth: public ones with a reason, the rest with known scopes', () => {
    const problems: string[] = [];
    for (const route of allRoutes()) {
      const auth = route.auth as unknown as Record<string, unknown> | undefined;
      if (!auth) {
        problems.push(`${label(route)}: no auth declaration`);
      } else if ('public' in auth) {
        if (auth.public !== true || typeof auth.reason !== 'string' || auth.reason.trim().length < 5) problems.push(`${label(route)}: public without a reason`);
      } else {
        const scopes = auth.scopes as unknown[] | undefined;
        if (!Array.isArray(scopes) || scopes.length === 0) problems.push(`${label(route)}: no scopes`);
        else for (const scope of scopes) if (typeof scope !== 'string' || !isScope(scope)) problems.push(`${label(route)}: unknown scope ${String(scope)}`);
      }
    }
    assert.deepEqual(problems, []);
  });

  it('only health probes, the API description, pricing and the billing callback are public (SPEC 5.1, 6)', () => {
    const unexpected = allRoutes()
      .filter(isPublic)
      .filter((r) => !r.internal && !(r.method === 'get' && r.path === '/api/v1/pricing') && !(r.method === 'post' && /^\/api\/v1\/billing\/.*webhook$/.test(r.path)))
      .map(label);
    assert.deepEqual(unexpected, [], 'a new public route must be a deliberate, reviewed exception');
  });

  it('operation ids and method-path pairs are unique', () => {
    const ids = allRoutes().map((r) => r.operationId);
    assert.deepEqual(ids.filter((id, i) => ids.indexOf(id) !== i), []);
    const pairs = allRoutes().map(label);
    assert.deepEqual(pairs.filter((p, i) => pairs.indexOf(p) !== i), []);
  });

  it('versioned API paths start with /api/v1 and every other path is internal', () => {
    for (const route of allRoutes()) {
      if (!route.path.startsWith('/api/v1/')) assert.ok(route.internal, `${label(route)} is outside /api/v1 but not internal`);
    }
    for (const route of apiRoutes.filter((r) => !isPublic(r))) {
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

  it('projectParam names one of the route’s path parameters', () => {
    for (const route of apiRoutes) {
      if (isPublic(route) || !('projectParam' in route.auth) || route.auth.projectParam === undefined) continue;
      assert.ok(pathParams(route).includes(route.auth.projectParam), `${label(route)}: projectParam ${route.auth.projectParam} is not in the path`);
    }
  });

  it('every state-changing route needs an accountable actor', () => {
    const missing = apiRoutes
      .filter((r) => !isPublic(r) && r.method !== 'get' && !NON_MUTATING_POSTS[r.operationId])
      .filter((r) => !(r.auth as { accountableActor?: boolean }).accountableActor)
      .map(label);
    assert.deepEqual(missing, []);
  });

  it('Idempotency-Key is offered on POST routes only, and never on key creation', () => {
    for (const route of allRoutes().filter((r) => r.idempotent)) {
      assert.equal(route.method, 'post', `${label(route)} is idempotent by nature`);
      assert.ok(!isPublic(route), `${label(route)}: idempotency records are scoped to a key`);
      // The router keeps idempotency records inside the request's transaction; without one the header would be ignored.
      assert.notEqual(route.transaction, false, `${label(route)}: Idempotency-Key needs the request transaction`);
    }
    const createKey = apiRoutes.find((r) => r.operationId === 'createApiKey');
    assert.ok(createKey && !createKey.idempotent, 'the spec gives key creation no idempotency contract');
  });

  it('every route declares a success response', () => {
    for (const route of allRoutes()) {
      assert.ok(Object.keys(route.responses).some((s) => Number(s) >= 200 && Number(s) < 300), `${label(route)} declares no 2xx response`);
    }
  });

  it('the OpenAPI document lists every keyed route with its scopes and its 401, 403 and 429 answers', () => {
    const document = buildOpenApiDocument(apiRoutes, { version: 'test' }) as { paths: Record<string, Record<string, any>> };
    for (const route of apiRoutes.filter((r) => !isPublic(r))) {
      const operation = document.paths[route.path.replace(/:([A-Za-z_]+)/g, '{$1}')]?.[route.method];
      assert.ok(operation, `${label(route)} is missing from the OpenAPI document`);
      assert.deepEqual(operation['x-weft-scopes'], (route.auth as { scopes: string[] }).scopes);
      for (const status of ['401', '403', '429']) assert.ok(operation.responses[status], `${label(route)} does not document ${status}`);
      if (pathParams(route).length) assert.ok(operation.responses['404'], `${label(route)} does not document 404`);
      if (route.body || route.query || route.params) assert.ok(operation.responses['422'], `${label(route)} does not document 422`);
    }
  });
});
