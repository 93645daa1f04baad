import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { chromium, Browser, BrowserContext, Page } from 'playwright-core';
import { CONSOLE_OPERATION_ROUTES } from '../../../console/server';
import { ensureChromium } from '../../../scripts/infra/chromium';
import { env } from '../../support/environment';
import { newWorkspace } from '../../support/fixtures';
import { internalOperations } from '../../support/doors';
import { ConsoleClient, keepScreenshotOnFailure, PASSWORD, signedIn, within, guideScreenshot } from '../../support/console';

describe('The console’s Members page and its operations', function () {
  this.timeout(600_000);

  it('the access matrix of the console door: owners and admins pass each members operation’s access, a member gets 403 insufficient_scope', async () => {
    const consoleOnly = internalOperations('console');
    assert.deepEqual(consoleOnly.map((o) => o.name).sort(), ['createMemberInvite', 'deleteMember', 'listMembers', 'updateMember']);
    const ws = await newWorkspace();
    const people = { owner: await signedIn(ws.workspaceId, 'owner'), admin: await signedIn(ws.workspaceId, 'admin'), member: await signedIn(ws.workspaceId, 'member') };
    for (const operation of consoleOnly) {
      const routes = CONSOLE_OPERATION_ROUTES.filter((route) => route.operation === operation);
      assert.equal(routes.length, 1, `${operation.name} has one console route`);
      const route = routes[0];
      // An id no member has: past its access, the operation answers 404 (or 422 for an empty body), never 403.
      const path = route.path.replace(':member_id', randomUUID());
      const body = route.method === 'get' || route.method === 'delete' ? undefined : route.method === 'patch' ? { role: 'member' } : {};
      for (const [role, { client }] of Object.entries(people)) {
        const answer = await client.request(route.method.toUpperCase(), path, body);
        if (role === 'member') {
          assert.equal(answer.status, 403, `${operation.name} as a member`);
          assert.equal(answer.body.code, 'insufficient_scope', `${operation.name} as a member`);
        } else assert.ok(answer.status !== 403 && answer.status !== 401, `${operation.name} as ${role}: ${answer.status} ${JSON.stringify(answer.body)}`);
      }
    }
  });

  it('an owner invites, changes roles and grants, and removes; only an owner makes or removes an owner; the last owner stays', async () => {
    const ws = await newWorkspace();
    const owner = await signedIn(ws.workspaceId, 'owner');
    const admin = await signedIn(ws.workspaceId, 'admin');
    const email = `invited-${randomUUID().slice(0, 8)}@example.com`;
    const invited = await admin.client.request('POST', '/console/api/members/invites', { email, role: 'member' });
    assert.equal(invited.status, 201, JSON.stringify(invited.body));
    const token = new URL(invited.body.inviteUrl).hash.slice(1);
    const newcomer = new ConsoleClient();
    assert.equal((await newcomer.request('POST', '/console/api/invite/accept', { token, password: PASSWORD })).status, 200);
    assert.equal((await newcomer.signIn(email)).status, 201);

    assert.equal((await admin.client.request('POST', '/console/api/members/invites', { email: `x-${randomUUID()}@example.com`, role: 'owner' })).body.code, 'owner_required');
    assert.equal((await admin.client.request('PATCH', `/console/api/members/${invited.body.memberId}`, { role: 'owner' })).body.code, 'owner_required');
    assert.equal((await admin.client.request('DELETE', `/console/api/members/${owner.person.memberId}`)).body.code, 'owner_required');

    const granted = await admin.client.request('PATCH', `/console/api/members/${invited.body.memberId}`, { role: 'admin', readPermissions: ['pii'], writePermissions: ['crm.write'] });
    assert.equal(granted.status, 200, JSON.stringify(granted.body));
    assert.deepEqual([granted.body.member.role, granted.body.member.readPermissions, granted.body.member.writePermissions], ['admin', ['pii'], ['crm.write']]);
    assert.equal((await newcomer.request('GET', '/console/api/members')).status, 200, 'the promotion applies to the next request');

    // The bootstrap owner and the invited owner: one may go, then the other is the last.
    assert.equal((await owner.client.request('DELETE', `/console/api/members/${ws.memberId}`)).status, 204);
    const last = await owner.client.request('PATCH', `/console/api/members/${owner.person.memberId}`, { role: 'admin' });
    assert.equal(last.status, 409);
    assert.equal(last.body.code, 'last_owner');

    assert.equal((await owner.client.request('DELETE', `/console/api/members/${invited.body.memberId}`)).status, 204);
    const ended = await within(1_000, () => newcomer.request('GET', '/console/api/session'), (r) => r.status === 401);
    assert.equal(ended.status, 401);
    const listed = await owner.client.request('GET', '/console/api/members');
    assert.equal(listed.body.members.some((m: { id: string }) => m.id === invited.body.memberId), false);
  });

  describe('in headless Chromium', () => {
    let browser: Browser;
    let context: BrowserContext | undefined;
    let page: Page | undefined;
    before(async () => {
      browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox'] });
    });
    after(async () => {
      await browser?.close();
    });
    afterEach(async function () {
      await keepScreenshotOnFailure(this.currentTest, page);
      await context?.close();
    });

    it('invites a member from the page, and removing them there ends their session', async () => {
      const ws = await newWorkspace();
      const owner = await signedIn(ws.workspaceId, 'owner');
      context = await browser.newContext();
      const [name, value] = owner.client.cookie.split('=');
      await context.addCookies([{ name, value, domain: new URL(env().baseUrl).hostname, path: '/console', httpOnly: true, sameSite: 'Lax' }]);
      page = await context.newPage();
      const p = page;
      await p.goto(`${env().baseUrl}/console/members`);
      await p.getByRole('button', { name: 'Invite member' }).click();
      const email = `page-${randomUUID().slice(0, 8)}@example.com`;
      await p.getByLabel('Email').fill(email);
      await p.getByLabel('Role').selectOption('member');
      await p.getByRole('button', { name: 'Invite', exact: true }).click();
      const link = (await p.getByLabel('Invite link').textContent())!;
      const row = p.getByRole('row').filter({ hasText: email });
      await row.waitFor();
      await guideScreenshot(p, 'members');

      const invitee = new ConsoleClient();
      assert.equal((await invitee.request('POST', '/console/api/invite/accept', { token: new URL(link).hash.slice(1), password: PASSWORD })).status, 200);
      assert.equal((await invitee.signIn(email)).status, 201);

      await row.getByRole('button', { name: `Remove ${email}` }).click();
      await p.getByRole('dialog').getByRole('button', { name: 'Remove', exact: true }).click();
      await row.waitFor({ state: 'detached' });
      const ended = await within(1_000, () => invitee.request('GET', '/console/api/session'), (r) => r.status === 401);
      assert.equal(ended.status, 401);
    });
  });
});
