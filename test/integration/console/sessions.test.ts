import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { as, holdRequestWindow, newKey, newWorkspace, request } from '../../support/fixtures';
import { env } from '../../support/environment';
import { ConsoleClient, invite, PASSWORD, signedIn, tokenOf, within } from '../../support/console';
import { startApiScript } from '../../support/processes';
import { ADDRESS_FAILURES, signIn } from '../../../services/tenancy/console-sessions';
import { removeMember, setMemberRole } from '../../../services/tenancy/members';
import { MEMBER_SCOPES } from '../../../services/tenancy/member-access';
import { SCOPES } from '../../../core/scopes';

const count = async (table: string, where: Record<string, unknown>) => Number((await env().db(table).where(where).count({ n: '*' }))[0].n);

describe('Console sessions (against the running API)', function () {
  this.timeout(120_000);

  it('an invite sets an argon2id password once; sign-in answers an HttpOnly, SameSite=Lax cookie whose id is stored only as a digest', async () => {
    const ws = await newWorkspace();
    const person = await invite(ws.workspaceId, 'admin');
    const client = new ConsoleClient();
    const described = await client.request('POST', '/console/api/invite', { token: tokenOf(person) });
    assert.equal(described.status, 200);
    assert.equal(described.body.email, person.email);
    assert.equal((await client.request('POST', '/console/api/invite/accept', { token: tokenOf(person), password: 'short' })).body.code, 'weak_password');
    assert.equal((await client.request('POST', '/console/api/invite/accept', { token: tokenOf(person), password: PASSWORD })).status, 200);
    const reused = await client.request('POST', '/console/api/invite/accept', { token: tokenOf(person), password: 'another long password' });
    assert.equal(reused.status, 404, 'an invite is good for one use');
    const member = await env().db('members').where({ id: person.memberId }).first();
    assert.match(member.passwordHash, /^\$argon2id\$v=19\$/);

    const signed = await client.signIn(person.email.toUpperCase());
    assert.equal(signed.status, 201, JSON.stringify(signed.body));
    const cookie = signed.headers.get('set-cookie')!;
    assert.match(cookie, /^weft_session=[A-Za-z0-9_-]{43}; Path=\/console; HttpOnly; SameSite=Lax; Max-Age=604800$/, 'no Secure flag over http');
    const sessionId = /weft_session=([^;]+)/.exec(cookie)![1];
    const rows = await env().db('console_sessions').whereRaw('? = ANY(member_ids)', [person.memberId]);
    assert.equal(rows.length, 1);
    assert.notEqual(rows[0].idHash, sessionId, 'the id itself is stored nowhere');
    assert.equal(JSON.stringify(rows).includes(sessionId), false);
    assert.equal(signed.body.member.id, person.memberId);
    assert.deepEqual(signed.body.pages.map((p: { name: string }) => p.name), ['Keys', 'Members', 'Endpoints', 'Pipelines', 'Runs', 'Writes', 'Ontology', 'Queries', 'Usage', 'Limits']);

    const wrong = await new ConsoleClient().signIn(person.email, 'not the password at all');
    assert.equal(wrong.status, 401);
    assert.equal(wrong.body.code, 'sign_in_failed');
    assert.equal(JSON.stringify(wrong.body).includes('not the password'), false);
  });

  it('derives what a member may do from the role: owners and admins hold every scope, a member the read scopes and execution', () => {
    assert.deepEqual([...MEMBER_SCOPES].sort(), [...SCOPES.filter((s) => s.endsWith(':read')), 'pipelines:execute', 'queries:execute', 'sparql:query'].sort());
  });

  it('runs operations as the member: a plain member gets the same 403 as a key without org:manage, and no keys page', async () => {
    const ws = await newWorkspace();
    const { client } = await signedIn(ws.workspaceId, 'member');
    const session = await client.request('GET', '/console/api/session');
    assert.deepEqual(session.body.pages.map((p: { name: string }) => p.name), ['Endpoints', 'Pipelines', 'Writes', 'Ontology', 'Queries'], 'listing runs needs an owner or admin, as over HTTP');
    const keys = await client.request('GET', '/console/api/keys');
    const overHttp = await as(await newKey(ws, { scopes: ['org:read'] })).get('/api/v1/api-keys');
    assert.equal(keys.status, 403);
    assert.equal(keys.body.code, overHttp.body.code);
    assert.equal(keys.body.code, 'insufficient_scope');
    assert.equal((await client.request('POST', '/console/api/keys', { name: 'x', scopes: ['org:read'] })).status, 403);
    assert.equal((await client.request('GET', '/console/keys')).status, 403, 'the page a role cannot use answers 403');
    assert.equal((await client.request('GET', '/console/endpoints')).status, 200);
    assert.equal((await client.request('GET', '/console/api/projects')).status, 200, 'members read projects');
  });

  it('an owner creates, lists and revokes keys through the one operation; a bad body is the same 422 as over HTTP', async () => {
    const ws = await newWorkspace();
    const { person, client } = await signedIn(ws.workspaceId, 'owner');
    const created = await client.request('POST', '/console/api/keys', { name: 'from-console', scopes: ['org:read'] });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const secret = created.body.key.secret as string;
    assert.equal(created.body.key.createdByMemberId, person.memberId, 'the member is the key’s accountable actor');
    assert.equal((await as(secret).get('/api/v1/organization')).status, 200);
    const listed = await client.request('GET', '/console/api/keys');
    assert.ok(listed.body.keys.some((k: { id: string; secret?: string }) => k.id === created.body.key.id && k.secret === undefined));
    const invalid = await client.request('POST', '/console/api/keys', { name: 'x', scopes: ['org:read'], extra: 1 });
    const invalidHttp = await as(ws.apiKey).post('/api/v1/api-keys', { name: 'x', scopes: ['org:read'], extra: 1 });
    assert.equal(invalid.status, 422);
    assert.equal(invalid.body.code, invalidHttp.body.code);
    assert.equal((await client.request('DELETE', `/console/api/keys/${created.body.key.id}`)).status, 204);
    const revoked = await within(5_000, () => as(secret).get('/api/v1/organization'), (r) => r.status === 401);
    assert.equal(revoked.status, 401);
  });

  it('refuses a mutation from another origin, or without the session’s token, before it runs', async () => {
    const ws = await newWorkspace();
    const { client } = await signedIn(ws.workspaceId, 'owner');
    const before = await count('api_keys', { workspaceId: ws.workspaceId });
    const foreign = await client.request('POST', '/console/api/keys', { name: 'x', scopes: ['org:read'] }, { Origin: 'http://evil.example' });
    assert.equal(foreign.status, 403);
    assert.equal(foreign.body.code, 'cross_site_request');
    const noToken = await client.request('POST', '/console/api/keys', { name: 'x', scopes: ['org:read'] }, { 'X-Weft-Console-Token': 'forged' });
    assert.equal(noToken.body.code, 'cross_site_request');
    const form = await fetch(`${env().baseUrl}/console/api/keys`, { method: 'POST', headers: { Cookie: client.cookie, 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'name=x&scopes=org:manage' });
    assert.equal(form.status, 403, 'a form with no Origin');
    assert.equal(await count('api_keys', { workspaceId: ws.workspaceId }), before);
    const signInElsewhere = await new ConsoleClient(env().baseUrl, 'http://evil.example').signIn('x@example.com');
    assert.equal(signInElsewhere.body.code, 'cross_site_request', 'signing in is a mutation too (login CSRF)');
  });

  it('/api/v1 never accepts the session cookie', async () => {
    const ws = await newWorkspace();
    const { client } = await signedIn(ws.workspaceId, 'owner');
    const answer = await request('GET', '/api/v1/organization', { key: null, headers: { Cookie: client.cookie } });
    assert.equal(answer.status, 401);
    assert.equal(answer.body.code, 'missing_credential');
  });

  it('answers every console path with a policy that forbids framing and scripts from elsewhere', async () => {
    for (const path of ['/console/sign-in', '/console/api/session', '/console/nowhere']) {
      const answer = await request('GET', path, { key: null });
      assert.match(answer.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/, path);
      assert.match(answer.headers.get('content-security-policy') ?? '', /script-src 'self'/, path);
      assert.equal(answer.headers.get('x-frame-options'), 'DENY', path);
    }
  });

  it('removing a member ends their sessions in another API process within a second; a role change narrows them at once', async () => {
    const ws = await newWorkspace();
    const other = await startApiScript();
    try {
      const leaver = await signedIn(ws.workspaceId, 'admin');
      const there = new ConsoleClient(other.url);
      there.cookie = leaver.client.cookie;
      there.csrfToken = leaver.client.csrfToken;
      assert.equal((await there.request('GET', '/console/api/keys')).status, 200);

      const demoted = await signedIn(ws.workspaceId, 'admin');
      const demotedThere = new ConsoleClient(other.url);
      demotedThere.cookie = demoted.client.cookie;
      assert.equal((await demotedThere.request('GET', '/console/api/keys')).status, 200);

      await removeMember(env().db, ws.workspaceId, leaver.person.memberId);
      await setMemberRole(env().db, ws.workspaceId, demoted.person.memberId, 'member');
      const ended = await within(1_000, () => there.request('GET', '/console/api/session'), (r) => r.status === 401);
      assert.equal(ended.status, 401);
      assert.equal((await leaver.client.request('GET', '/console/api/keys')).status, 401);
      const narrowed = await within(1_000, () => demotedThere.request('GET', '/console/api/keys'), (r) => r.status === 403);
      assert.equal(narrowed.status, 403);
      assert.equal(narrowed.body.code, 'insufficient_scope');
    } finally {
      await other.api.stop();
    }
  });

  it('the last owner can be neither removed nor demoted', async () => {
    const ws = await newWorkspace();
    await assert.rejects(removeMember(env().db, ws.workspaceId, ws.memberId), /last owner/);
    await assert.rejects(setMemberRole(env().db, ws.workspaceId, ws.memberId, 'admin'), /last owner/);
    const heir = await invite(ws.workspaceId, 'owner');
    await setMemberRole(env().db, ws.workspaceId, ws.memberId, 'admin');
    await assert.rejects(removeMember(env().db, ws.workspaceId, heir.memberId), /last owner/);
  });

  it('sessions end after 8 idle hours, 7 days after signing in, and on sign-out', async () => {
    const ws = await newWorkspace();
    const idle = await signedIn(ws.workspaceId, 'member');
    await env().db('console_sessions').whereRaw('? = ANY(member_ids)', [idle.person.memberId]).update({ lastActiveAt: env().db.raw("now() - interval '8 hours 1 minute'") });
    assert.equal((await idle.client.request('GET', '/console/api/session')).status, 401);
    const old = await signedIn(ws.workspaceId, 'member');
    await env().db('console_sessions').whereRaw('? = ANY(member_ids)', [old.person.memberId]).update({ endsAt: env().db.raw("now() - interval '1 second'") });
    assert.equal((await old.client.request('GET', '/console/api/session')).status, 401);
    const leaving = await signedIn(ws.workspaceId, 'member');
    const cookie = leaving.client.cookie;
    const out = await leaving.client.request('DELETE', '/console/api/session');
    assert.equal(out.status, 204);
    assert.match(out.headers.get('set-cookie') ?? '', /Max-Age=0/);
    const replayed = new ConsoleClient();
    replayed.cookie = cookie;
    assert.equal((await replayed.request('GET', '/console/api/session')).status, 401, 'the old cookie is worth nothing');
  });

  it('a person in several workspaces picks one; the password of one membership opens only that one', async () => {
    const email = `multi-${randomUUID().slice(0, 8)}@example.com`;
    const [a, b, c] = [await newWorkspace(), await newWorkspace(), await newWorkspace()];
    const client = new ConsoleClient();
    for (const ws of [a, b]) await client.request('POST', '/console/api/invite/accept', { token: tokenOf(await invite(ws.workspaceId, 'member', email)), password: PASSWORD });
    await client.request('POST', '/console/api/invite/accept', { token: tokenOf(await invite(c.workspaceId, 'owner', email)), password: 'a different password' });
    const signed = await client.signIn(email);
    assert.equal(signed.status, 201);
    assert.equal(signed.body.member, null);
    assert.deepEqual(signed.body.memberships.map((m: { workspaceId: string }) => m.workspaceId).sort(), [a.workspaceId, b.workspaceId].sort());
    assert.equal((await client.request('GET', '/console/api/projects')).body.code, 'workspace_not_chosen');
    const intoC = await client.request('PUT', '/console/api/session/member', { memberId: (await env().db('members').where({ workspaceId: c.workspaceId }).whereRaw('lower(email) = ?', [email]).first()).id });
    assert.equal(intoC.status, 404, 'a membership the password did not open');
    const chosen = await client.request('PUT', '/console/api/session/member', { memberId: signed.body.memberships[0].memberId });
    assert.equal(chosen.status, 200);
    assert.equal(chosen.body.member.workspaceId, signed.body.memberships[0].workspaceId);
  });

  it('limits failed sign-ins to 10 per 15 minutes per account (429 with Retry-After, the right password too) and 50 per address', async () => {
    const ws = await newWorkspace();
    const { person } = await signedIn(ws.workspaceId, 'member');
    const client = new ConsoleClient();
    for (let i = 0; i < 10; i += 1) assert.equal((await client.signIn(person.email, `wrong password ${i}`)).status, 401);
    const limited = await client.signIn(person.email, 'wrong again, eleventh');
    assert.equal(limited.status, 429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    assert.ok(retryAfter > 800 && retryAfter <= 900, `Retry-After ${retryAfter}`);
    assert.equal((await client.signIn(person.email)).status, 429, 'the right password waits too');

    // By client address (the socket's: this API does not trust X-Forwarded-For), through the service with an address of its own.
    const address = `192.0.2.${Math.floor(Math.random() * 250) + 1}-${randomUUID().slice(0, 4)}`;
    for (let i = 0; i < ADDRESS_FAILURES; i += 1) await assert.rejects(signIn(env().db, { email: `nobody-${i}-${randomUUID()}@example.com`, password: 'x', clientAddress: address }), /wrong/);
    const fresh = await signedIn(ws.workspaceId, 'member');
    await assert.rejects(signIn(env().db, { email: fresh.person.email, password: PASSWORD, clientAddress: address }), /Too many failed sign-ins for this client address/);
    assert.equal((await signIn(env().db, { email: fresh.person.email, password: PASSWORD, clientAddress: '192.0.2.254' })).session.member?.id, fresh.person.memberId, 'another address signs in');
    const spoofed = await request('POST', '/console/api/session', { key: null, body: { email: 'x@example.com', password: 'y' }, headers: { Origin: env().baseUrl, 'X-Forwarded-For': address } });
    assert.equal(spoofed.status, 401, 'X-Forwarded-For is not believed without WEFT_TRUST_PROXY');
  });

  it('counts console requests against the workspace’s bucket and the member’s own', async () => {
    const ws = await newWorkspace();
    const { client } = await signedIn(ws.workspaceId, 'member');
    assert.equal((await as(ws.apiKey).put('/api/v1/api-limits', { workspaceRequests: 600, apiKeyRequests: 3 })).status, 200);
    holdRequestWindow();
    for (let i = 0; i < 3; i += 1) assert.equal((await client.request('GET', '/console/api/projects')).status, 200);
    const answers = await client.request('GET', '/console/api/projects');
    assert.equal(answers.status, 429);
    assert.ok(Number(answers.headers.get('retry-after')) >= 1);
    assert.equal(answers.body.dimension, 'member');
    // The workspace's keys have their own caller buckets.
    assert.equal((await as(ws.apiKey).get('/api/v1/organization')).status, 200);
  });

  it('is a door of its own: no console route is in the OpenAPI document', async () => {
    const document = await request('GET', '/api/v1/openapi.json', { key: null });
    assert.equal(document.status, 200);
    assert.deepEqual(Object.keys(document.body.paths).filter((path) => path.startsWith('/console')), []);
  });

  it('logs no password, session id, invite token or key secret', async () => {
    const ws = await newWorkspace();
    const other = await startApiScript({ LOG_LEVEL: 'debug' });
    try {
      const person = await invite(ws.workspaceId, 'owner', undefined, other.url);
      const client = new ConsoleClient(other.url);
      assert.equal((await client.request('POST', '/console/api/invite/accept', { token: tokenOf(person), password: PASSWORD })).status, 200);
      assert.equal((await new ConsoleClient(other.url).signIn(person.email, 'a wrong password, logged nowhere')).status, 401);
      assert.equal((await client.signIn(person.email)).status, 201);
      const created = await client.request('POST', '/console/api/keys', { name: 'logged', scopes: ['org:read'] });
      assert.equal(created.status, 201);
      const sessionId = client.cookie.split('=')[1];
      assert.ok(sessionId);
      assert.equal((await client.request('DELETE', '/console/api/session')).status, 204);
      const output = other.api.output();
      assert.match(output, /\/console\/api\/keys/, 'the requests were logged');
      for (const secret of [PASSWORD, 'a wrong password', tokenOf(person), created.body.key.secret, sessionId]) assert.equal(output.includes(secret), false, `logged: ${secret.slice(0, 12)}…`);
    } finally {
      await other.api.stop();
    }
  });

  it('marks the cookie Secure when WEFT_PUBLIC_URL is https, whose origin is then the console’s own', async () => {
    const ws = await newWorkspace();
    const person = await invite(ws.workspaceId, 'member');
    const saved = process.env.WEFT_PUBLIC_URL;
    process.env.WEFT_PUBLIC_URL = 'https://weft.example.com/';
    try {
      const client = new ConsoleClient(env().baseUrl, 'https://weft.example.com');
      assert.equal((await client.request('POST', '/console/api/invite/accept', { token: tokenOf(person), password: PASSWORD })).status, 200);
      const signed = await client.signIn(person.email);
      assert.equal(signed.status, 201);
      assert.match(signed.headers.get('set-cookie') ?? '', /; HttpOnly; SameSite=Lax; Max-Age=604800; Secure$/);
    } finally {
      if (saved === undefined) delete process.env.WEFT_PUBLIC_URL;
      else process.env.WEFT_PUBLIC_URL = saved;
    }
  });
});
