import assert from 'node:assert/strict';
import { loadEncryptionKey } from '../../../core/config';
import { decryptSecret } from '../../../core/secrets';
import { as, newKey, newWorkspace } from '../../support/fixtures';
import { env } from '../../support/environment';
import { runAdmin } from '../../support/processes';
import { schemaProblems } from '../../../core/schema-validator';
import type { Operation } from '../../../services/operations/operation';
import { bootstrapWorkspaceOperation, createMemberKeyOperation, setWorkspacePlanOperation } from '../../../services/tenancy/operator-operations';

const admin = (...args: string[]) => runAdmin(args);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
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
    const refused = [
      ['bootstrap', '--json'],
      ['bootstrap', '--workspace', '   '],
      ['plugin', 'install', '--workspace', 'not-a-uuid', '--capability', 'http_dataset'],
      ['plugin', 'install', '--workspace', '00000000-0000-4000-8000-000000000000', '--capability', 'no_such_capability'],
      ['plugin', 'install', '--workspace', '00000000-0000-4000-8000-000000000000', '--capability', 'http_dataset', '--config', '{not json'],
      ['member', 'remove', '--workspace', '00000000-0000-4000-8000-000000000000', '--member', '00000000-0000-4000-8000-000000000001'],
      ['frobnicate'],
      ['bootstrap', '--workspace', 'x', '--unknown-flag'],
    ];
    // Run at once: each is a process of its own, and none of them may write.
    const results = await Promise.all(refused.map((args) => admin(...args)));
    for (const [at, result] of results.entries()) {
      const args = refused[at];
      assert.notEqual(result.code, 0, `${args.join(' ')} should fail`);
      assert.match(result.stderr, /admin: \S/, `${args.join(' ')} should explain itself`);
      assert.equal(result.stdout, '', 'nothing on stdout for a failed command');
    }
    assert.deepEqual({ workspaces: await count('workspaces'), installations: await count('plugin_installations') }, before);
  });

  it('installs a plugin, printing only the installation id and storing the credential encrypted', async () => {
    const ws = await newWorkspace();
    const credential = 'Bearer x';
    const config = { baseUrl: 'https://api.example.com/', headers: { Authorization: credential } };
    const result = await admin('plugin', 'install', '--workspace', ws.workspaceId, '--capability', 'http_dataset', '--config', JSON.stringify(config), '--json');
    assert.equal(result.code, 0, result.stderr);
    const printed = JSON.parse(result.stdout);
    assert.deepEqual(Object.keys(printed), ['installationId']);
    assert.match(printed.installationId, UUID);
    assert.equal(`${result.stdout}${result.stderr}`.includes(credential), false, 'the credential is not echoed');

    const row = await env().db('plugin_installations').where({ id: printed.installationId }).first();
    assert.ok(row, 'the installation row exists');
    assert.equal(row.workspaceId, ws.workspaceId);
    assert.equal(row.capability, 'http_dataset');
    assert.equal(row.settings.baseUrl, 'https://api.example.com/');
    assert.equal(row.settings.headers, undefined, 'the credential is not in the clear settings');
    assert.equal(JSON.stringify(row).includes(credential), false, 'the credential is nowhere in the clear');
    assert.equal(typeof row.encryptedCredentials, 'string');
    // Encrypted with the deployment's key, not dropped or merely encoded.
    assert.deepEqual(JSON.parse(decryptSecret(row.encryptedCredentials, loadEncryptionKey())), { headers: { Authorization: credential } });
  });

  it('adds a member, printing its id, who is then an accountable member of the workspace', async () => {
    const ws = await newWorkspace();
    const result = await admin('member', 'add', '--workspace', ws.workspaceId, '--name', 'Grace', '--role', 'admin', '--json');
    assert.equal(result.code, 0, result.stderr);
    const printed = JSON.parse(result.stdout);
    assert.deepEqual(Object.keys(printed), ['memberId']);
    assert.match(printed.memberId, UUID);
    const row = await env().db('members').where({ id: printed.memberId }).first();
    assert.ok(row, 'the member row exists');
    assert.equal(row.workspaceId, ws.workspaceId);
    assert.equal(row.name, 'Grace');
    assert.equal(row.role, 'admin');
    assert.equal(row.removedAt, null);

    const plain = await admin('member', 'add', '--workspace', ws.workspaceId, '--name', 'Lin', '--json');
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal((await env().db('members').where({ id: JSON.parse(plain.stdout).memberId }).first()).role, 'member', 'the default role');

    // A key held by the new member may change things: the member is accountable.
    const key = await newKey(ws, { scopes: ['projects:write'] }, printed.memberId);
    const created = await as(key).post('/api/v1/projects', { name: 'by-grace' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
  });

  it('creates a key for a member, printing its secret once, with the scopes and grants asked for', async () => {
    const ws = await newWorkspace();
    const member = JSON.parse((await admin('member', 'add', '--workspace', ws.workspaceId, '--name', 'Ada', '--json')).stdout).memberId;
    const result = await admin('key', 'create', '--workspace', ws.workspaceId, '--member', member, '--name', 'approver', '--scopes', 'org:read,policy:approve', '--write-permissions', 'crm.write', '--json');
    assert.equal(result.code, 0, result.stderr);
    const printed = JSON.parse(result.stdout);
    assert.deepEqual(Object.keys(printed).sort(), ['keyId', 'secret']);
    const row = await env().db('api_keys').where({ id: printed.keyId }).first();
    assert.equal(row.createdByMemberId, member);
    assert.deepEqual(row.scopes, ['org:read', 'policy:approve']);
    assert.deepEqual(row.writePermissions, ['crm.write']);
    assert.equal((await as(printed.secret).get('/api/v1/organization')).status, 200);

    const other = await newWorkspace();
    const refused = await admin('key', 'create', '--workspace', other.workspaceId, '--member', member, '--name', 'x', '--scopes', 'org:read');
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /No active member/);
  });

  it('removes a member, after which their keys can read but not change anything', async () => {
    const created = JSON.parse((await admin('bootstrap', '--workspace', 'Leavers', '--json')).stdout);
    // The last owner cannot leave: another owner first.
    const lastOwner = await admin('member', 'remove', '--workspace', created.workspaceId, '--member', created.memberId);
    assert.equal(lastOwner.code, 2);
    assert.match(lastOwner.stderr, /last owner/);
    assert.equal(lastOwner.stdout, '');
    assert.equal(JSON.parse((await admin('member', 'add', '--workspace', created.workspaceId, '--name', 'Heir', '--role', 'owner', '--json')).stdout).memberId.length, 36);
    const removed = await admin('member', 'remove', '--workspace', created.workspaceId, '--member', created.memberId);
    assert.equal(removed.code, 0, removed.stderr);
    const read = await as(created.apiKey).get('/api/v1/organization');
    assert.equal(read.status, 200);
    const write = await as(created.apiKey).post('/api/v1/projects', { name: 'after-leaving' });
    assert.equal(write.status, 403);
    assert.equal(write.body.code, 'actor_not_accountable');
  });

  it('invites a person by email, printing the member and a one-use link that expires in 7 days', async () => {
    const ws = await newWorkspace();
    const result = await admin('member', 'invite', '--workspace', ws.workspaceId, '--email', 'Dana@Example.com', '--role', 'admin', '--json');
    assert.equal(result.code, 0, result.stderr);
    const printed = JSON.parse(result.stdout);
    assert.deepEqual(Object.keys(printed), ['memberId', 'inviteUrl']);
    assert.match(printed.memberId, UUID);
    const url = new URL(printed.inviteUrl);
    assert.equal(url.pathname, '/console/invite');
    // The token is in the fragment, which browsers never send, so no server or proxy logs it.
    assert.match(url.hash, /^#[A-Za-z0-9_-]{43}$/);
    const member = await env().db('members').where({ id: printed.memberId }).first();
    assert.deepEqual([member.workspaceId, member.email, member.role, member.passwordHash], [ws.workspaceId, 'Dana@Example.com', 'admin', null]);
    const invite = await env().db('member_invites').where({ memberId: printed.memberId }).first();
    assert.notEqual(invite.tokenHash, url.hash.slice(1), 'only a digest of the token is stored');
    const days = (invite.expiresAt.getTime() - invite.createdAt.getTime()) / 86_400_000;
    assert.ok(Math.abs(days - 7) < 0.01, `expires after ${days} days`);

    // The email is unique in the workspace, whatever its case; another workspace may have it too.
    const taken = await admin('member', 'invite', '--workspace', ws.workspaceId, '--email', 'dana@example.com', '--json');
    assert.equal(taken.code, 2);
    assert.match(taken.stderr, /Another member of this workspace has this email/);
    const elsewhere = await newWorkspace();
    assert.equal((await admin('member', 'invite', '--workspace', elsewhere.workspaceId, '--email', 'dana@example.com', '--json')).code, 0);

    // --member invites an existing member again: a new link, and the older one no longer works.
    const again = await admin('member', 'invite', '--workspace', ws.workspaceId, '--member', printed.memberId, '--json');
    assert.equal(again.code, 0, again.stderr);
    const second = JSON.parse(again.stdout);
    assert.equal(second.memberId, printed.memberId);
    assert.notEqual(second.inviteUrl, printed.inviteUrl);
    assert.equal(Number((await env().db('member_invites').where({ memberId: printed.memberId }).count({ n: '*' }))[0].n), 1);

    // An existing member without an email (made before the console) gets one with the invite.
    const bootstrapOwner = await admin('member', 'invite', '--workspace', ws.workspaceId, '--member', ws.memberId, '--email', 'owner@example.com', '--json');
    assert.equal(bootstrapOwner.code, 0, bootstrapOwner.stderr);
    assert.equal((await env().db('members').where({ id: ws.memberId }).first()).email, 'owner@example.com');
    // The last owner cannot be demoted through an invite either.
    const demoted = await admin('member', 'invite', '--workspace', ws.workspaceId, '--member', ws.memberId, '--role', 'member', '--json');
    assert.equal(demoted.code, 2);
    assert.match(demoted.stderr, /last owner/);
  });

  it('refuses an invite without an email or member, or with a bad role or address', async () => {
    const ws = await newWorkspace();
    const refused = [
      ['member', 'invite', '--workspace', ws.workspaceId],
      ['member', 'invite', '--workspace', ws.workspaceId, '--email', 'x@example.com', '--role', 'king'],
      ['member', 'invite', '--workspace', ws.workspaceId, '--email', 'not an email'],
      ['member', 'invite', '--workspace', ws.workspaceId, '--member', ws.memberId],
    ];
    const results = await Promise.all(refused.map((args) => admin(...args, '--json')));
    for (const [at, result] of results.entries()) {
      const args = refused[at];
      assert.equal(result.code, 2, `${args.join(' ')} should fail`);
      assert.match(result.stderr, /admin: \S/);
      assert.equal(result.stdout, '');
    }
    assert.equal(Number((await env().db('member_invites').where({ workspaceId: ws.workspaceId }).count({ n: '*' }))[0].n), 0);
  });

  it('prints with --json what each command’s operation declares as its output', async () => {
    const printedBy = async (operation: Operation, ...args: string[]) => {
      const result = await admin(...args, '--json');
      assert.equal(result.code, 0, result.stderr);
      const printed = JSON.parse(result.stdout);
      assert.deepEqual(schemaProblems(operation.output![200].schema!, printed), [], `admin ${args.join(' ')} prints ${result.stdout}`);
      return printed;
    };
    const created = await printedBy(bootstrapWorkspaceOperation, 'bootstrap', '--workspace', 'Declared output');
    await printedBy(createMemberKeyOperation, 'key', 'create', '--workspace', created.workspaceId, '--member', created.memberId, '--name', 'declared', '--scopes', 'org:read');
    await printedBy(setWorkspacePlanOperation, 'plan', 'set', '--workspace', created.workspaceId, '--plan', 'team', '--credit-limit', 'none');
  });
});
