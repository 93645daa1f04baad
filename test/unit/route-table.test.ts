import assert from 'node:assert/strict';
import Router from '@koa/router';
import { allRoutes } from '../../api/app';
import { RouteTable } from '../../api/router';

/**
 * The route table hands a request to a small router of the routes that can match its path: every
 * path must match exactly the layers the router of every route matches (the same route runs, and a
 * 405's Allow header lists the same methods).
 */
describe('The route table', () => {
  const routes = allRoutes();
  const table = new RouteTable(routes.map((route) => route.path));
  for (const route of routes) table.register(route.path, (router) => router[route.method](route.path, () => undefined));
  const reference = new Router();
  for (const route of routes) reference[route.method](route.path, () => undefined);

  const layersOf = (router: { match: Router['match'] }, path: string, method: string) => {
    const matched = router.match(path, method);
    return { path: matched.path.map((layer) => `${layer.methods.join(',')} ${layer.path}`), pathAndMethod: matched.pathAndMethod.map((layer) => layer.path), route: matched.route };
  };
  const sameAsOneRouter = (path: string) => {
    for (const method of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']) {
      assert.deepEqual(layersOf(table, path, method), layersOf(reference, path, method), `${method} ${path}`);
    }
  };

  it('matches every route template, filled in, as one router of every route does', () => {
    const id = '3f1c2a9e-1111-4222-8333-444455556666';
    for (const route of routes) {
      const path = route.path.replace(/:[A-Za-z_]+/g, id);
      assert.ok(table.match(path, route.method.toUpperCase()).route, `${route.method} ${route.path}`);
      sameAsOneRouter(path);
      sameAsOneRouter(`${path}/`);
      sameAsOneRouter(path.toUpperCase());
      sameAsOneRouter(route.path.replace(/:[A-Za-z_]+/g, 'a%2Fb.c'));
    }
  });

  it('hands paths it cannot place to the router of every route, which answers them as before', () => {
    for (const path of ['/', '/api', '/api/v1', '/api/v1/', '/api/v1/nothing', '/api/v1/projects//pipelines', '/api//v1/organization', '/api/v1/organization//',
      '/api/v1/organizatio%6E', '/api/v1/organizätion', '*', '/api/v1/projects/x/nothing/y', '/api/v1/data-endpoints/x/records/extra']) {
      sameAsOneRouter(path);
    }
    assert.equal(table.routerFor('/api/v1/nothing'), table.all);
  });

  it('puts the routes of one path template in a router of their own', () => {
    const organization = table.routerFor('/api/v1/organization');
    assert.notEqual(organization, table.all);
    assert.ok(organization.stack.length <= 3, `${organization.stack.length} routes`);
    assert.ok(table.routerFor(`/api/v1/projects/x/pipelines`).stack.length < 10);
  });
});
