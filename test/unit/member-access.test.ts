import assert from 'node:assert/strict';
import { pagesFor } from '../../console/server/pages';
import { admits } from '../../services/operations/invoke';
import { operations } from '../../services/operations/registry';
import { hasScope } from '../../services/tenancy/access';
import { principalOfMember } from '../../services/tenancy/member-access';

const member = (role: 'owner' | 'admin' | 'member', grants: { read?: string[]; write?: string[] } = {}) =>
  principalOfMember({ id: '00000000-0000-4000-8000-000000000001', workspaceId: '00000000-0000-4000-8000-000000000002', role, readPermissions: grants.read ?? [], writePermissions: grants.write ?? [] });

describe('What a signed-in member may do, derived from the role in one place', () => {
  it('owners and admins are admitted to every keyed operation an unrestricted org:manage key is', () => {
    for (const role of ['owner', 'admin'] as const) {
      const refused = operations.filter((operation) => !('public' in operation.access) && !('operator' in operation.access) && !admits(member(role), operation)).map((o) => o.name);
      assert.deepEqual(refused, [], role);
    }
  });

  it('a member holds the read scopes, pipelines:execute, queries:execute and sparql:query, and nothing administrative', () => {
    const principal = member('member');
    for (const scope of ['org:read', 'runs:read', 'data:read', 'pipelines:execute', 'queries:execute', 'sparql:query'] as const) assert.ok(hasScope(principal, scope), scope);
    for (const scope of ['org:manage', 'projects:write', 'data:write', 'sparql:update', 'policy:approve', 'pipelines:write'] as const) assert.ok(!hasScope(principal, scope), scope);
    assert.equal(principal.signedIn, true);
    assert.deepEqual(principal.projectIds, [], 'every project');
  });

  it('never implies a named grant: a member holds only those given', () => {
    assert.deepEqual(member('owner').readPermissions, []);
    assert.deepEqual(member('owner').writePermissions, []);
    assert.deepEqual(member('member', { read: ['pii'] }).readPermissions, ['pii']);
  });

  it('shows each role the pages whose operation admits it', () => {
    const navigation = (role: 'admin' | 'member') => pagesFor(member(role)).filter((page) => page.inNavigation !== false).map((page) => page.name);
    const inner = (role: 'admin' | 'member') => pagesFor(member(role)).filter((page) => page.inNavigation === false).map((page) => page.name);
    assert.deepEqual(navigation('admin'), ['Keys', 'Members', 'Endpoints', 'Pipelines', 'Runs', 'Writes', 'Ontology', 'Queries', 'Usage', 'Limits']);
    // An endpoint's, a pipeline's, a run's and a query's page, and the SPARQL editor, are reached from the Endpoints, Pipelines, Runs, Queries and Ontology pages, not from the navigation.
    assert.deepEqual(inner('admin'), ['Endpoint', 'Pipeline', 'Run', 'SPARQL', 'Query']);
    assert.deepEqual(inner('member'), ['Endpoint', 'Pipeline', 'Run', 'SPARQL', 'Query']);
    // Listing runs needs an owner or admin (listRuns' actor), over HTTP as here.
    assert.deepEqual(navigation('member'), ['Endpoints', 'Pipelines', 'Writes', 'Ontology', 'Queries']);
  });
});
