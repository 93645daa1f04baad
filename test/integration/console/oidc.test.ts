import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Page } from 'playwright-core';
import { env } from '../../support/environment';
import { newWorkspace } from '../../support/fixtures';
import { browserPages, ConsoleClient, invite, Person } from '../../support/console';
import { BUILT_START, freePort, startScript } from '../../support/processes';

// Single sign-on against a real OpenID provider: oidc-provider (the certified OpenID Connect
// server for Node), on a port of its own, with the console registered as a confidential client
// that must use PKCE. Its development login form takes any login; the login names an account of
// this test, whose email and email_verified the test decides. The provider is reached as
// `localhost`, the console as 127.0.0.1: another site, as a real provider is.

const CLIENT_ID = 'weft-console';
const CALLBACK = '/console/sign-in/oidc/callback';
const OIDC_SETTINGS = ['WEFT_OIDC_ISSUER', 'WEFT_OIDC_CLIENT_ID', 'WEFT_OIDC_CLIENT_SECRET', 'WEFT_PUBLIC_URL'] as const;

const sessionsOf = async (memberId: string) => Number((await env().db('console_sessions').whereRaw('? = ANY(member_ids)', [memberId]).count({ n: '*' }))[0].n);

describe('Console single sign-on (OpenID Connect, against a real provider)', function () {
  this.timeout(120_000);
  const browser = browserPages();
  const accounts = new Map<string, { email: string; email_verified: boolean }>();
  const clientSecret = randomBytes(24).toString('base64url');
  /** What the provider was asked to authorize, by the console. */
  const authorizationRequests: URLSearchParams[] = [];
  let server: http.Server;
  let issuer = '';
  /** A second API process, whose log the log test reads; registered with the provider beside the test's API. */
  let loggedApiUrl = '';
  const saved: Partial<Record<(typeof OIDC_SETTINGS)[number], string>> = {};

  /** A login at the provider whose account has this email, verified or not. */
  const account = (email: string, verified = true): string => {
    const login = `user-${randomUUID().slice(0, 8)}`;
    accounts.set(login, { email, email_verified: verified });
    return login;
  };

  before(async () => {
    server = http.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    issuer = `http://localhost:${(server.address() as AddressInfo).port}`;
    loggedApiUrl = `http://127.0.0.1:${await freePort()}`;
    const { default: Provider } = await import('oidc-provider');
    const provider = new Provider(issuer, {
      clients: [{ client_id: CLIENT_ID, client_secret: clientSecret, redirect_uris: [`${env().baseUrl}${CALLBACK}`, `${loggedApiUrl}${CALLBACK}`], grant_types: ['authorization_code'], response_types: ['code'] }],
      pkce: { required: () => true },
      claims: { openid: ['sub'], email: ['email', 'email_verified'] },
      findAccount: (_ctx, sub) => {
        const claims = accounts.get(sub);
        return claims && { accountId: sub, claims: () => ({ sub, ...claims }) };
      },
      cookies: { keys: [randomBytes(16).toString('hex')] },
    });
    const handle = provider.callback();
    server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
      const url = new URL(req.url ?? '/', issuer);
      if (url.pathname === '/auth' && url.searchParams.has('client_id')) authorizationRequests.push(url.searchParams);
      void handle(req, res);
    });
    // The test's API reads these on every sign-in, as an installation reads them from its environment.
    for (const name of OIDC_SETTINGS) saved[name] = process.env[name];
  });

  const configure = () => {
    Object.assign(process.env, { WEFT_OIDC_ISSUER: issuer, WEFT_OIDC_CLIENT_ID: CLIENT_ID, WEFT_OIDC_CLIENT_SECRET: clientSecret, WEFT_PUBLIC_URL: env().baseUrl });
  };

  after(async () => {
    for (const name of OIDC_SETTINGS) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await new Promise((resolve) => server?.close(resolve));
  });

  /**
   * From the console's sign-in page through the provider's login and consent, back to the console.
   * Each attempt logs in afresh (no session at the provider from an earlier one); `atProvider`
   * runs while the person is at the provider's login form.
   */
  async function signInAtProvider(page: Page, login: string, atProvider?: () => Promise<void>, consoleUrl = env().baseUrl): Promise<void> {
    await page.context().clearCookies({ domain: 'localhost' });
    await page.goto(`${consoleUrl}/console/sign-in`);
    await page.getByRole('button', { name: 'Sign in with single sign-on' }).click();
    await page.getByPlaceholder('Enter any login').fill(login);
    await atProvider?.();
    await page.getByPlaceholder('and password').fill('any password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
  }

  const refusalShown = async (page: Page, code: string) => {
    await page.getByRole('alert').filter({ hasText: `(${code})` }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/console/sign-in');
  };

  it('offers single sign-on on the sign-in page only when WEFT_OIDC_* is set', async () => {
    const { page } = browser;
    assert.equal(process.env.WEFT_OIDC_ISSUER, undefined);
    const plain = await new ConsoleClient().request('GET', '/console/api/sign-in');
    assert.deepEqual(plain.body, { singleSignOn: false });
    await page.goto(`${env().baseUrl}/console/sign-in`);
    await page.getByRole('button', { name: 'Sign in', exact: true }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Sign in with single sign-on' }).count(), 0);
    const start = await new ConsoleClient().request('GET', '/console/sign-in/oidc');
    assert.equal(start.status, 302);
    assert.equal(start.headers.get('location'), '/console/sign-in?refused=sso_not_configured');

    configure();
    await page.reload();
    await page.getByRole('button', { name: 'Sign in with single sign-on' }).waitFor();
  });

  it('signs in the member whose verified email the provider vouches for, with the session a password opens', async () => {
    configure();
    const { page, context } = browser;
    const ws = await newWorkspace();
    // Invited, no password ever set: the provider's word is the sign-in.
    const person = await invite(ws.workspaceId, 'admin');
    let code = '';
    page.on('request', (request) => {
      const url = new URL(request.url());
      if (url.pathname === CALLBACK) code = url.searchParams.get('code') ?? '';
    });
    await signInAtProvider(page, account(person.email.toUpperCase()));
    await page.getByRole('navigation', { name: 'Console' }).waitFor();
    assert.ok(code, 'the provider sent an authorization code back');

    const asked = authorizationRequests.at(-1)!;
    assert.equal(asked.get('code_challenge_method'), 'S256');
    assert.match(asked.get('code_challenge') ?? '', /^[A-Za-z0-9_-]{43}$/);
    assert.ok(asked.get('state') && asked.get('nonce'), 'state and nonce');
    assert.equal(asked.get('redirect_uri'), `${env().baseUrl}${CALLBACK}`);

    const cookies = await context.cookies([`${env().baseUrl}/console`, `${env().baseUrl}${CALLBACK}`]);
    const session = cookies.find((c) => c.name === 'weft_session');
    assert.ok(session, 'a session cookie');
    assert.deepEqual([session.httpOnly, session.sameSite, session.path], [true, 'Lax', '/console']);
    assert.equal(cookies.some((c) => c.name === 'weft_sso_flow'), false, 'the flow cookie is spent');
    const rows = await env().db('console_sessions').whereRaw('? = ANY(member_ids)', [person.memberId]);
    assert.equal(rows.length, 1);
    assert.notEqual(rows[0].idHash, session.value, 'the id itself is stored nowhere');
    assert.equal(rows[0].memberId, person.memberId);

    const client = new ConsoleClient();
    client.cookie = `weft_session=${session.value}`;
    const shown = await client.request('GET', '/console/api/session');
    assert.equal(shown.body.member.id, person.memberId);
    assert.equal((await client.request('GET', '/console/api/keys')).status, 200, 'acting as the admin it is');

    // The code was for one exchange: sent again (with a flow cookie of another attempt), it opens nothing.
    const replay = await new ConsoleClient().request('GET', '/console/sign-in/oidc');
    const flowCookie = /weft_sso_flow=([^;]+)/.exec(replay.headers.get('set-cookie') ?? '')![1];
    const state = new URL(replay.headers.get('location')!).searchParams.get('state')!;
    const replayed = await fetch(`${env().baseUrl}${CALLBACK}?code=${encodeURIComponent(code)}&state=${state}&iss=${encodeURIComponent(issuer)}`, { headers: { Cookie: `weft_sso_flow=${flowCookie}` }, redirect: 'manual' });
    assert.equal(replayed.headers.get('location'), '/console/sign-in?refused=sso_failed');
    assert.equal(await sessionsOf(person.memberId), 1);
  });

  it('lets a person in several workspaces pick one', async () => {
    configure();
    const { page } = browser;
    const email = `sso-${randomUUID().slice(0, 8)}@example.com`;
    const names = [`sso-a-${randomUUID().slice(0, 6)}`, `sso-b-${randomUUID().slice(0, 6)}`];
    const [a, b] = [await newWorkspace(names[0]), await newWorkspace(names[1])];
    const people: Person[] = [await invite(a.workspaceId, 'member', email), await invite(b.workspaceId, 'owner', email)];
    await signInAtProvider(page, account(email));
    await page.getByRole('heading', { name: 'Pick a workspace' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/console/workspaces');
    await page.getByRole('button', { name: names[1] }).click();
    await page.getByRole('navigation', { name: 'Console' }).waitFor();
    const [row] = await env().db('console_sessions').whereRaw('? = ANY(member_ids)', [people[1].memberId]);
    assert.deepEqual([...row.memberIds].sort(), people.map((p) => p.memberId).sort());
    assert.equal(row.memberId, people[1].memberId);
  });

  it('refuses an email the provider has not verified', async () => {
    configure();
    const { page } = browser;
    const ws = await newWorkspace();
    const person = await invite(ws.workspaceId, 'owner');
    await signInAtProvider(page, account(person.email, false));
    await refusalShown(page, 'sso_email_unverified');
    assert.equal(await sessionsOf(person.memberId), 0);
    assert.equal((await browser.context.cookies(`${env().baseUrl}/console`)).some((c) => c.name === 'weft_session'), false);
  });

  it('refuses a verified email no member has', async () => {
    configure();
    const { page } = browser;
    await signInAtProvider(page, account(`nobody-${randomUUID().slice(0, 8)}@example.com`));
    await refusalShown(page, 'sso_no_member');
    await page.getByRole('alert').filter({ hasText: 'ask an owner or admin to invite it' }).waitFor();
  });

  it('refuses a callback whose state was tampered with or left out, or that comes without this browser’s flow', async () => {
    configure();
    const { page, context } = browser;
    const ws = await newWorkspace();
    const person = await invite(ws.workspaceId, 'member');
    // The authorization request as the console sends it, changed on its way to the provider,
    // which sends its state back as it got it (the callback itself is reached by a redirect,
    // which a route cannot change).
    const tamper = (change: (authorization: URL) => void) =>
      page.route(`${env().baseUrl}/console/sign-in/oidc`, async (route) => {
        const response = await route.fetch({ maxRedirects: 0 });
        const authorization = new URL(response.headers().location);
        change(authorization);
        await route.fulfill({ response, headers: { ...response.headers(), location: authorization.href } });
      });

    await tamper((url) => url.searchParams.set('state', `${url.searchParams.get('state')}x`));
    await signInAtProvider(page, account(person.email));
    await refusalShown(page, 'sso_state_mismatch');
    await page.unrouteAll();

    await tamper((url) => url.searchParams.delete('state'));
    await signInAtProvider(page, account(person.email));
    await refusalShown(page, 'sso_state_mismatch');
    await page.unrouteAll();

    // The provider's answer reaches a browser that did not start this sign-in (login CSRF): it has no flow.
    await signInAtProvider(page, account(person.email), () => context.clearCookies({ name: 'weft_sso_flow' }));
    await refusalShown(page, 'sso_flow_lost');
    assert.equal(await sessionsOf(person.memberId), 0);

    // A flow cookie made up or altered by the client does not open.
    const forged = await fetch(`${env().baseUrl}${CALLBACK}?code=x&state=y`, { headers: { Cookie: 'weft_sso_flow=v1:AAAA:BBBB:CCCC' }, redirect: 'manual' });
    assert.equal(forged.headers.get('location'), '/console/sign-in?refused=sso_flow_lost');
    const started = await new ConsoleClient().request('GET', '/console/sign-in/oidc');
    const sealed = /weft_sso_flow=([^;]+)/.exec(started.headers.get('set-cookie') ?? '')![1];
    const state = new URL(started.headers.get('location')!).searchParams.get('state')!;
    const altered = `${sealed.slice(0, -2)}${sealed.endsWith('AA') ? 'BB' : 'AA'}`;
    const answer = await fetch(`${env().baseUrl}${CALLBACK}?code=x&state=${state}`, { headers: { Cookie: `weft_sso_flow=${altered}` }, redirect: 'manual' });
    assert.equal(answer.headers.get('location'), '/console/sign-in?refused=sso_flow_lost');
  });

  it('logs no client secret, authorization code, flow cookie or session id of a sign-on, even at debug level', async () => {
    const { page, context } = browser;
    const ws = await newWorkspace();
    const person = await invite(ws.workspaceId, 'member');
    const port = new URL(loggedApiUrl).port;
    const logged = await startScript(BUILT_START, ['api'], {
      HOST: '127.0.0.1', PORT: port, LOG_LEVEL: 'debug',
      WEFT_OIDC_ISSUER: issuer, WEFT_OIDC_CLIENT_ID: CLIENT_ID, WEFT_OIDC_CLIENT_SECRET: clientSecret, WEFT_PUBLIC_URL: loggedApiUrl,
    }, /API:\s+http:\/\/\S+\s/);
    try {
      let code = '';
      const flowCookies: string[] = [];
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.pathname === CALLBACK) code = url.searchParams.get('code') ?? '';
      });
      page.on('response', async (response) => {
        const flow = /weft_sso_flow=([^;]+)/.exec((await response.headerValue('set-cookie')) ?? '');
        if (flow && flow[1]) flowCookies.push(flow[1]);
      });
      await signInAtProvider(page, account(person.email), undefined, loggedApiUrl);
      await page.getByRole('navigation', { name: 'Console' }).waitFor();
      const session = (await context.cookies(`${loggedApiUrl}/console`)).find((cookie) => cookie.name === 'weft_session');
      assert.ok(code && session && flowCookies.length > 0, 'a code, a session and a flow cookie to look for');
      const output = logged.output();
      assert.match(output, /\/console\/sign-in\/oidc\/callback/, 'the callback request was logged');
      for (const secret of [clientSecret, code, session.value, ...flowCookies]) assert.equal(output.includes(secret), false, `logged: ${secret.slice(0, 8)}…`);
    } finally {
      await logged.stop();
    }
  });

  it('starts a flow with a short-lived, sealed HttpOnly cookie that holds no readable state, nonce or verifier', async () => {
    configure();
    const started = await new ConsoleClient().request('GET', '/console/sign-in/oidc');
    assert.equal(started.status, 302);
    const location = new URL(started.headers.get('location')!);
    assert.equal(location.origin, issuer);
    assert.equal(location.searchParams.get('client_id'), CLIENT_ID);
    assert.equal(location.searchParams.get('scope'), 'openid email');
    const setCookie = started.headers.get('set-cookie') ?? '';
    assert.match(setCookie, /^weft_sso_flow=v1:[^;]+; Path=\/console\/sign-in\/oidc; HttpOnly; SameSite=Lax; Max-Age=600$/);
    for (const value of [location.searchParams.get('state')!, location.searchParams.get('nonce')!]) assert.equal(setCookie.includes(value), false);
    assert.equal(setCookie.includes(clientSecret) || location.href.includes(clientSecret), false);
  });
});
