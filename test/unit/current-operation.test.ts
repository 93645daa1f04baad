import assert from 'node:assert/strict';
import type { ServiceDependencies } from '../../services/operations/context';
import { execute } from '../../services/operations/invoke';
import { defineOperation } from '../../services/operations/operation';
import { principalFrom } from '../../services/tenancy/access';
import { readableThroughBindings } from '../../services/endpoints/data-guard';

/** Operations are held to their declared named grants through the principal their context hands out. */
describe('An operation checking named grants', () => {
  const principal = principalFrom({
    workspaceId: 'w', apiKeyId: 'k', memberId: 'm', memberActive: true, memberRole: 'owner', scopes: ['data:read'],
    projectIds: [], workspaceResources: true, readPermissions: ['pii'], writePermissions: null,
  });
  const caller = { deps: {} as ServiceDependencies, principal, door: 'activity' as const, requestId: 'r' };
  const reading = (grants?: 'read') => defineOperation({
    name: grants ? 'declaresReadGrants' : 'declaresNoGrants',
    summary: 'test',
    access: { scopes: { anyOf: ['data:read'] }, ...(grants ? { grants } : {}) },
    effect: 'read',
    // An await first: the operation must still be known after it.
    async run(ctx) {
      await new Promise((resolve) => setImmediate(resolve));
      return [...readableThroughBindings(ctx.principal, [{ endpointId: 'e', grants: ['pii'] }])];
    },
  });

  it('is refused when it did not declare them, also after an await, in every environment', async () => {
    const environment = process.env.NODE_ENV;
    try {
      for (const mode of ['test', 'production', undefined]) {
        if (mode === undefined) delete process.env.NODE_ENV;
        else process.env.NODE_ENV = mode;
        await assert.rejects(execute(caller, reading(), {}), /declaresNoGrants checks named read grants but does not declare them/, String(mode));
      }
    } finally {
      process.env.NODE_ENV = environment;
    }
  });

  it('is held to its declaration through a copy of its principal', async () => {
    const copying = defineOperation({
      name: 'copiesItsPrincipal',
      summary: 'test',
      access: { scopes: { anyOf: ['data:read'] } },
      effect: 'read',
      async run(ctx) {
        return [...readableThroughBindings({ ...ctx.principal }, [{ endpointId: 'e', grants: ['pii'] }])];
      },
    });
    await assert.rejects(execute(caller, copying, {}), /copiesItsPrincipal checks named read grants but does not declare them/);
  });

  it('refuses a check of named grants for a principal no operation acts with', () => {
    assert.throws(() => readableThroughBindings(principal, [{ endpointId: 'e', grants: ['pii'] }]), /no operation acts with/);
  });

  it('checks them when it declared them, with the key its caller authenticated', async () => {
    assert.deepEqual((await execute(caller, reading('read'), {})).output, ['e']);
  });

  it('leaves the caller’s principal as it was', async () => {
    await execute(caller, reading('read'), {});
    // Not marked with the operation: a check with it is still one made outside invoke.
    assert.throws(() => readableThroughBindings(principal, [{ endpointId: 'e', grants: [] }]), /no operation acts with/);
  });
});
