import { randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ensureChromium } from '../../scripts/infra/chromium';
import { dataDir, projectRoot } from '../../core/paths';
import { env } from './environment';
import { invoke } from '../../services/operations/invoke';
import type { Caller } from '../../services/operations/context';
import { inviteMemberOperation } from '../../services/tenancy/operator-operations';

// Console fixtures: people invited through the operator's invite (the CLI's `member invite`), who
// set their password through the invite's own route, and an HTTP client that keeps the session
// cookie as a browser would.

export const PASSWORD = 'correct horse battery staple';

export interface Person {
  email: string;
  memberId: string;
  inviteUrl: string;
}

/**
 * `member invite`: the operator operation the CLI's command invokes, through the same admin door,
 * in this process (the command itself is test/integration/cli's: a CLI process for each person the
 * console tests invite was seconds each), with the link to this test's API, as the CLI run with
 * WEFT_PUBLIC_URL set to it prints it.
 */
export async function invite(workspaceId: string, role: 'owner' | 'admin' | 'member', email = `p-${randomUUID().slice(0, 8)}@example.com`, baseUrl = env().baseUrl): Promise<Person> {
  const caller: Caller = { deps: env().apiDependencies, door: 'admin', requestId: `test-invite-${randomUUID()}` };
  const invited = await invoke(caller, inviteMemberOperation, { params: {}, query: {}, body: { workspaceId, email, role } });
  const link = new URL(invited.inviteUrl);
  return { email, memberId: invited.memberId, inviteUrl: new URL(`${link.pathname}${link.hash}`, baseUrl).href };
}

/** The invite's token (the link's fragment). */
export const tokenOf = (person: Person): string => new URL(person.inviteUrl).hash.slice(1);

export interface ConsoleResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

/** A console client with a cookie jar of one session, sending the Origin and token a console page would. */
export class ConsoleClient {
  cookie = '';
  csrfToken = '';
  constructor(readonly baseUrl = env().baseUrl, private readonly origin = baseUrl) {}

  async request<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ConsoleResponse<T>> {
    const sent: Record<string, string> = { Origin: this.origin };
    if (this.cookie) sent.Cookie = this.cookie;
    if (this.csrfToken && method !== 'GET') sent['X-Weft-Console-Token'] = this.csrfToken;
    if (body !== undefined) sent['Content-Type'] = 'application/json';
    Object.assign(sent, headers);
    const response = await fetch(`${this.baseUrl}${path}`, { method, headers: sent, body: body === undefined ? undefined : JSON.stringify(body), redirect: 'manual' });
    const setCookie = response.headers.get('set-cookie');
    if (setCookie) {
      const value = /weft_session=([^;]*)/.exec(setCookie)?.[1] ?? '';
      this.cookie = value ? `weft_session=${value}` : '';
    }
    const text = await response.text();
    const parsed = text && /json/.test(response.headers.get('content-type') ?? '') ? JSON.parse(text) : text;
    if (parsed && typeof parsed === 'object' && typeof parsed.csrfToken === 'string') this.csrfToken = parsed.csrfToken;
    return { status: response.status, headers: response.headers, body: parsed as T };
  }

  signIn(email: string, password = PASSWORD) {
    return this.request('POST', '/console/api/session', { email, password });
  }
}

/** An invited person who has set their password, and a client signed in as them. */
export async function signedIn(workspaceId: string, role: 'owner' | 'admin' | 'member'): Promise<{ person: Person; client: ConsoleClient }> {
  const person = await invite(workspaceId, role);
  const client = new ConsoleClient();
  const accepted = await client.request('POST', '/console/api/invite/accept', { token: tokenOf(person), password: PASSWORD });
  if (accepted.status !== 200) throw new Error(`invite/accept answered ${accepted.status}: ${JSON.stringify(accepted.body)}`);
  const session = await client.signIn(person.email);
  if (session.status !== 201) throw new Error(`sign-in answered ${session.status}: ${JSON.stringify(session.body)}`);
  return { person, client };
}

export { within } from './polling';

/** Where screenshots of failed browser tests are kept, beside the test run's output. */
export function screenshotPath(title: string): string {
  const dir = path.join(dataDir(), 'test-output', 'console');
  mkdirSync(dir, { recursive: true });
  return path.join(dir, `${title.replace(/[^A-Za-z0-9]+/g, '-').slice(0, 100)}-${Date.now()}.png`);
}

/**
 * The console guide's pictures (docs/guides/images/console-<name>.png), taken where a browser test
 * has a page in the state the guide shows: only in `npm run docs:screenshots`, which sets
 * WEFT_GUIDE_SCREENSHOTS; every other run takes none.
 */
export async function guideScreenshot(page: Page, name: string): Promise<void> {
  if (!process.env.WEFT_GUIDE_SCREENSHOTS) return;
  const dir = path.join(projectRoot, 'docs', 'guides', 'images');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `console-${name}.png`) });
}

/** Keeps a screenshot of the page when the current test failed, and says where. */
export async function keepScreenshotOnFailure(test: Mocha.Test | undefined, page: Page | undefined): Promise<void> {
  if (!page || !test || test.state !== 'failed') return;
  const file = screenshotPath(test.fullTitle());
  await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
  console.error(`    screenshot of the failure: ${file}`);
}

/**
 * Debian's chromium for the describe block this is called in, a fresh context and page for each
 * test, and a screenshot of each failure kept with the test output.
 */
export function browserPages(): { readonly page: Page; readonly context: BrowserContext } {
  let browser: Browser | undefined;
  let context: BrowserContext | undefined;
  let page: Page | undefined;
  before(async () => {
    browser = await chromium.launch({ executablePath: ensureChromium(), args: ['--no-sandbox'] });
  });
  after(async () => {
    await browser?.close();
  });
  beforeEach(async () => {
    context = await browser!.newContext();
    page = await context.newPage();
  });
  afterEach(async function () {
    await keepScreenshotOnFailure(this.currentTest, page);
    await context?.close();
  });
  return {
    get page() {
      return page!;
    },
    get context() {
      return context!;
    },
  };
}

/** In a browser page: follows the invite link, sets the password, signs in, and waits for the console's navigation. */
export async function acceptAndSignInPage(page: Page, person: Person, baseUrl = env().baseUrl): Promise<void> {
  await page.goto(person.inviteUrl);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByLabel('Confirm password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Set password' }).click();
  await page.getByRole('status').filter({ hasText: `Sign in as ${person.email}` }).waitFor();
  await page.goto(`${baseUrl}/console/sign-in`);
  await page.getByLabel('Email').fill(person.email);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}
