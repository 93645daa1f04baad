import assert from 'node:assert/strict';
import type { Page } from 'playwright-core';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { env } from '../../support/environment';
import { as, newWorkspace } from '../../support/fixtures';
import { runAdmin } from '../../support/processes';
import { browserPages, invite, PASSWORD, Person, within, guideScreenshot } from '../../support/console';

const NAVIGATION = ['Keys', 'Members', 'Endpoints', 'Pipelines', 'Runs', 'Writes', 'Ontology', 'Queries', 'Usage', 'Limits'];

describe('The workspace console in headless Chromium', function () {
  // The first run on a machine may install Debian's chromium.
  this.timeout(600_000);
  const browsing = browserPages();
  const base = () => env().baseUrl;

  /** Follows the invite link, sets the password, then signs in on the sign-in page. */
  async function acceptAndSignIn(p: Page, person: Person): Promise<void> {
    await p.goto(person.inviteUrl);
    await p.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await p.getByLabel('Confirm password').fill(PASSWORD);
    await p.getByRole('button', { name: 'Set password' }).click();
    await p.getByRole('status').filter({ hasText: `Sign in as ${person.email}` }).waitFor();
    await p.goto(`${base()}/console/sign-in`);
    await p.getByLabel('Email').fill(person.email);
    await p.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('navigation', { name: 'Console' }).waitFor();
  }

  const navigationLinks = (p: Page) => p.getByRole('navigation', { name: 'Console' }).getByRole('link').allTextContents();
  const sessionStatus = (p: Page) => p.evaluate(async () => (await fetch('/console/api/session')).status);

  it('invite, set a password, sign in: an owner sees every page in the navigation', async () => {
    const ws = await newWorkspace();
    const owner = await invite(ws.workspaceId, 'owner');
    await acceptAndSignIn(browsing.page, owner);
    assert.deepEqual(await navigationLinks(browsing.page), NAVIGATION);
    // The invite is spent.
    await browsing.page.goto(owner.inviteUrl);
    await browsing.page.getByRole('alert').filter({ hasText: 'unknown, used or expired' }).waitFor();
  });

  it('creates a key whose secret is shown once, works with an HTTP client, and is revoked from the page (the client then gets 401)', async () => {
    const ws = await newWorkspace();
    await acceptAndSignIn(browsing.page, await invite(ws.workspaceId, 'admin'));
    const p = browsing.page;
    await p.getByRole('link', { name: 'Keys' }).click();
    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByLabel('Name', { exact: true }).fill('from-the-console');
    await p.getByLabel('org:read', { exact: true }).check();
    await p.getByLabel('projects:read', { exact: true }).check();
    await p.getByRole('button', { name: 'Create', exact: true }).click();
    const secret = (await p.getByLabel('Secret', { exact: true }).textContent())!.trim();
    assert.match(secret, /^weft_sk_[A-Za-z0-9]{12}_[A-Za-z0-9_-]{43}$/);
    await p.getByRole('button', { name: 'Copy' }).waitFor();

    const organization = await as(secret).get('/api/v1/organization');
    assert.equal(organization.status, 200);
    assert.equal(organization.body.organization.id, ws.workspaceId);

    // Shown once: after Done, and after a reload, the page holds only its prefix.
    await p.getByRole('button', { name: 'Done' }).click();
    const row = p.getByRole('row').filter({ hasText: 'from-the-console' });
    await row.waitFor();
    await p.reload();
    await row.waitFor();
    assert.equal((await p.content()).includes(secret), false);
    assert.match((await row.textContent())!, new RegExp(secret.slice(0, 20)));
    assert.match((await row.textContent())!, /org:read, projects:read/);
    await guideScreenshot(p, 'keys');

    await row.getByRole('button', { name: /^Revoke/ }).click();
    await p.getByRole('dialog').getByRole('button', { name: 'Revoke', exact: true }).click();
    await row.waitFor({ state: 'detached' });
    const refused = await within(5_000, () => as(secret).get('/api/v1/organization'), (r) => r.status === 401);
    assert.equal(refused.status, 401);
  });

  it('a plain member has no Keys link, and the keys page and routes answer 403', async () => {
    const ws = await newWorkspace();
    await acceptAndSignIn(browsing.page, await invite(ws.workspaceId, 'member'));
    const p = browsing.page;
    // The navigation is drawn whole from the session: what it lacks is not still coming.
    assert.deepEqual(await navigationLinks(p), ['Endpoints', 'Pipelines', 'Writes', 'Ontology', 'Queries']);
    const keysPage = await p.goto(`${base()}/console/keys`);
    assert.equal(keysPage!.status(), 403);
    await p.getByRole('alert').filter({ hasText: 'Your role cannot use this page' }).waitFor();
    const usagePage = await p.goto(`${base()}/console/usage`);
    assert.equal(usagePage!.status(), 403);
    const api = await p.evaluate(async () => {
      const response = await fetch('/console/api/keys');
      return { status: response.status, body: (await response.json()) as { code: string } };
    });
    assert.equal(api.status, 403);
    assert.equal(api.body.code, 'insufficient_scope');
  });

  it('refuses a form posted from another site, even with the session cookie', async () => {
    const ws = await newWorkspace();
    await acceptAndSignIn(browsing.page, await invite(ws.workspaceId, 'owner'));
    const keysBefore = Number((await env().db('api_keys').where({ workspaceId: ws.workspaceId }).count({ n: '*' }))[0].n);
    // Another origin on the same host: the same site, so a SameSite=Lax cookie goes along; the Origin check refuses it.
    const attacker: Server = createServer((_, res) => {
      res.setHeader('Content-Type', 'text/html');
      res.end(`<form method="post" action="${base()}/console/api/keys"><input name="name" value="planted"><input name="scopes" value="org:manage"><button>Go</button></form>`);
    });
    await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
    try {
      const p = browsing.page;
      await p.goto(`http://127.0.0.1:${(attacker.address() as AddressInfo).port}/`);
      const [answer] = await Promise.all([
        p.waitForResponse((response) => response.url() === `${base()}/console/api/keys` && response.request().method() === 'POST'),
        p.getByRole('button', { name: 'Go' }).click(),
      ]);
      assert.equal(answer.status(), 403);
      assert.equal((await answer.json()).code, 'cross_site_request');
      assert.match((await answer.request().allHeaders()).cookie ?? '', /weft_session=/, 'the cookie was sent: the Origin check refused the request');
    } finally {
      attacker.close();
    }
    assert.equal(Number((await env().db('api_keys').where({ workspaceId: ws.workspaceId }).count({ n: '*' }))[0].n), keysBefore);
  });

  it('removing a member (from another process, the CLI) ends their session within a second', async () => {
    const ws = await newWorkspace();
    const leaver = await invite(ws.workspaceId, 'admin');
    await acceptAndSignIn(browsing.page, leaver);
    const p = browsing.page;
    assert.equal(await sessionStatus(p), 200);
    const removed = await runAdmin(['member', 'remove', '--workspace', ws.workspaceId, '--member', leaver.memberId]);
    assert.equal(removed.code, 0, removed.stderr);
    const status = await within(1_000, () => sessionStatus(p), (s) => s === 401);
    assert.equal(status, 401);
    await p.reload();
    await p.getByRole('button', { name: 'Sign in' }).waitFor();
  });

  it('repeated wrong passwords get 429 with Retry-After, shown on the sign-in page', async () => {
    const ws = await newWorkspace();
    const person = await invite(ws.workspaceId, 'member');
    const p = browsing.page;
    await p.goto(`${base()}/console/sign-in`);
    const attempt = async (password: string) => {
      await p.getByLabel('Email').fill(person.email);
      await p.getByLabel('Password', { exact: true }).fill(password);
      const [answer] = await Promise.all([
        p.waitForResponse((response) => response.url() === `${base()}/console/api/session` && response.request().method() === 'POST'),
        p.getByRole('button', { name: 'Sign in' }).click(),
      ]);
      return answer;
    };
    for (let i = 0; i < 10; i += 1) assert.equal((await attempt(`wrong password number ${i}`)).status(), 401);
    const limited = await attempt('wrong password, eleventh');
    assert.equal(limited.status(), 429);
    assert.ok(Number(limited.headers()['retry-after']) > 0);
    await p.getByRole('alert').filter({ hasText: 'Too many failed sign-ins' }).waitFor();
  });
});
