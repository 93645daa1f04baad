import assert from 'node:assert/strict';
import { as } from '../support/fixtures';
import { env } from '../support/environment';
import { runScript } from '../support/processes';

const admin = (...args: string[]) => runScript('scripts/admin.ts', args, { WEFT_LOG_TO_STDERR: '1' });
const count = async (table: string) => Number((await env().db(table).count({ n: '*' }))[0].n);

describe('The operator CLI', function () {
  this.timeout(120_000);

  it('bootstraps a workspace whose key works on GET /organization', async () => {
    const result = await admin('bootstrap', '--workspace', 'CLI Corp', '--json');
    assert.equal(result.code, 0, result.stderr);
    const created = JSON.parse(result.stdout);
    assert.deepEqual(Object.keys(created).sort(), ['apiKey', 'memberId', 'projectId', 'workspaceId']);
    const res = await as(created.apiKey).get('/api/v1/organization');
    assert.equal(res.status, 200);
    assert.equal(res.body.organization.name, 'CLI Corp');
    assert.equal(res.body.organization.id, created.workspaceId);
  });

  it('rejects bad arguments with a message and a non-zero exit, creating nothing', async () => {
    const before = { workspaces: await count('workspaces'), installations: await count('plugin_installations') };
    for (const args of [
      ['bootstrap', '--json'],
      ['bootstrap', '--workspace', '   '],
      ['plugin', 'install', '--workspace', 'not-a-uuid', '--capability', 'http_dataset'],
      ['plugin', 'install', '--workspace', '00000000-0000-4000-8000-000000000000', '--capability', 'no_such_capability'],
      ['plugin', 'install', '--workspace', '00000000-0000-4000-8000-000000000000', '--capability', 'http_dataset', '--config', '{not json'],
      ['member', 'remove', '--workspace', '00000000-0000-4000-8000-000000000000', '--member', '00000000-0000-4000-8000-000000000001'],
      ['frobnicate'],
      ['bootstrap', '--workspace', 'x', '--unknown-flag'],
    ]) {
      const result = await admin(...args);
      assert.notEqual(result.code, 0, `${args.join(' ')} should fail`);
      assert.match(result.stderr, /admin: \S/, `${args.join(' ')} should explain itself`);
      assert.equal(result.stdout, '', 'nothing on stdout for a failed command');
    }
    assert.deepEqual({ workspaces: await count('workspaces'), installations: await count('plugin_installations') }, before);
  });

  it('removes a member, after which their keys can read but not change anything', async () => {
    const created = JSON.parse((await admin('bootstrap', '--workspace', 'Leavers', '--json')).stdout);
    const removed = await admin('member', 'remove', '--workspace', created.workspaceId, '--member', created.memberId);
    assert.equal(removed.code, 0, removed.stderr);
    const read = await as(created.apiKey).get('/api/v1/organization');
    assert.equal(read.status, 200);
    const write = await as(created.apiKey).post('/api/v1/projects', { name: 'after-leaving' });
    assert.equal(write.status, 403);
    assert.equal(write.body.code, 'actor_not_accountable');
  });
});
