import assert from 'node:assert/strict';
import type { Scope } from '../../core/scopes';
import { authorize, authorizeProject, hasScope, missingReadPermissions, Principal } from '../../services/tenancy/access';

const principal = (overrides: Omit<Partial<Principal>, 'scopes'> & { scopes?: Scope[] } = {}): Principal => ({
  workspaceId: 'w',
  apiKeyId: 'k',
  memberId: 'm',
  memberActive: true,
  projectIds: [],
  workspaceResources: false,
  readPermissions: [],
  writePermissions: [],
  ...overrides,
  scopes: new Set(overrides.scopes ?? []),
});

const codeOf = (work: () => void): string | undefined => {
  try {
    work();
    return undefined;
  } catch (error) {
    return (error as { code?: string }).code;
  }
};

describe('The authorization layers', () => {
  it('let org:manage stand in for operation scopes only on an unrestricted key', () => {
    assert.equal(hasScope(principal({ scopes: ['org:manage'] }), 'pipelines:execute'), true);
    assert.equal(hasScope(principal({ scopes: ['org:manage'], projectIds: ['p'] }), 'pipelines:execute'), false);
    assert.equal(hasScope(principal({ scopes: ['org:read'] }), 'org:manage'), false);
  });

  it('refuse a missing scope, a restricted key where an unrestricted one is needed, and shared resources without workspaceResources', () => {
    assert.equal(codeOf(() => authorize(principal({ scopes: ['runs:read'] }), { scopes: { anyOf: ['org:read'] } })), 'insufficient_scope');
    assert.equal(codeOf(() => authorize(principal({ scopes: ['org:read'], projectIds: ['p'] }), { scopes: { anyOf: ['org:read'] }, unrestrictedKey: true })), 'restricted_key');
    assert.equal(codeOf(() => authorize(principal({ scopes: ['data:read'], projectIds: ['p'] }), { scopes: { anyOf: ['data:read'] }, workspaceResources: true })), 'workspace_resources_denied');
    assert.equal(codeOf(() => authorize(principal({ scopes: ['data:read'], projectIds: ['p'], workspaceResources: true }), { scopes: { anyOf: ['data:read'] }, workspaceResources: true })), undefined);
    assert.equal(codeOf(() => authorize(principal({ scopes: ['data:read'] }), { scopes: { anyOf: ['data:read'] }, workspaceResources: true })), undefined, 'unrestricted keys already have shared resources');
  });

  it('require a current member as the accountable actor where declared', () => {
    const departed = principal({ scopes: ['projects:write'], memberActive: false });
    assert.equal(codeOf(() => authorize(departed, { scopes: { anyOf: ['projects:write'] }, actor: 'accountable' })), 'actor_not_accountable');
    assert.equal(codeOf(() => authorize(departed, { scopes: { anyOf: ['projects:write'] } })), undefined);
  });

  it('state whether any one or all of several scopes are needed', () => {
    const reader = principal({ scopes: ['pipelines:write'] });
    assert.equal(codeOf(() => authorize(reader, { scopes: { anyOf: ['pipelines:write', 'data:read'] } })), undefined);
    assert.equal(codeOf(() => authorize(reader, { scopes: { allOf: ['pipelines:write', 'data:read'] } })), 'insufficient_scope');
    assert.equal(codeOf(() => authorize(principal({ scopes: ['pipelines:write', 'data:read'] }), { scopes: { allOf: ['pipelines:write', 'data:read'] } })), undefined);
  });

  it('apply the project allowlist: empty means every project, a list means only those', () => {
    assert.equal(codeOf(() => authorizeProject(principal(), 'any')), undefined);
    assert.equal(codeOf(() => authorizeProject(principal({ projectIds: ['a'] }), 'a')), undefined);
    assert.equal(codeOf(() => authorizeProject(principal({ projectIds: ['a'] }), 'b')), 'project_denied');
  });

  it('satisfy a binding’s required read permissions only with named grants, not with queries:execute', () => {
    const executor = principal({ scopes: ['queries:execute', 'org:manage'] });
    assert.deepEqual(missingReadPermissions(executor, ['pii.read', 'finance']), ['pii.read', 'finance']);
    const granted = principal({ scopes: ['queries:execute'], readPermissions: ['finance'] });
    assert.deepEqual(missingReadPermissions(granted, ['pii.read', 'finance']), ['pii.read']);
    assert.deepEqual(missingReadPermissions(granted, []), []);
  });
});
