import { timingSafeEqual } from 'node:crypto';
import Router from '@koa/router';
import type Koa from 'koa';
import { publicUrl } from '../../core/config';
import { AuthenticationError, PermissionError } from '../../core/errors';
import { validateWithSchema } from '../../core/schema-validator';
import type { Caller, ServiceDependencies } from '../../services/operations/context';
import { execute } from '../../services/operations/invoke';
import type { Operation, Reply, RequestInput } from '../../services/operations/operation';
import type { Principal } from '../../services/tenancy/access';
import { ConsoleSession, csrfTokenOf, sessionOf, SESSION_MAX_DAYS } from '../../services/tenancy/console-sessions';
import { principalOfMember } from '../../services/tenancy/member-access';
import { FLOW_MINUTES } from '../../services/tenancy/single-sign-on';
import { admitMemberRequest } from '../../services/tenancy/member-requests';

// The console's door: what every console request passes before a page or an operation. The
// session comes from an HttpOnly cookie and nowhere else (the /api/v1 routes read only the
// Authorization header, so a cookie never authenticates there); every mutation comes from this
// origin (Origin) and carries the session's token in a header another site cannot read or set.

export const SESSION_COOKIE = 'weft_session';
export const CSRF_HEADER = 'X-Weft-Console-Token';

/** No framing, no inline script, nothing from another origin; the invite token in the fragment never leaves as a referrer. */
const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

export function setSecurityHeaders(ctx: Koa.Context): void {
  for (const name in SECURITY_HEADERS) ctx.set(name, SECURITY_HEADERS[name]);
}

/** The sealed state of a single sign-on under way (services/tenancy/single-sign-on.ts), sent only to its own routes. */
export const SINGLE_SIGN_ON_COOKIE = 'weft_sso_flow';
export const SINGLE_SIGN_ON_PATH = '/console/sign-in/oidc';

const secureCookies = () => publicUrl().startsWith('https:');

/**
 * An HttpOnly cookie of the console's. SameSite=Lax: sent on a top-level navigation from another
 * site (a link to the console, the provider sending a person back), never on its subrequests.
 */
function setConsoleCookie(ctx: Koa.Context, name: string, value: string, path: string, maxAgeSeconds: number): void {
  ctx.append('Set-Cookie', `${name}=${value}; Path=${path}; HttpOnly; SameSite=Lax; Max-Age=${maxAgeSeconds}${secureCookies() ? '; Secure' : ''}`);
}

export function setSessionCookie(ctx: Koa.Context, sessionId: string): void {
  setConsoleCookie(ctx, SESSION_COOKIE, sessionId, '/console', SESSION_MAX_DAYS * 86_400);
}

export function clearSessionCookie(ctx: Koa.Context): void {
  setConsoleCookie(ctx, SESSION_COOKIE, '', '/console', 0);
}

export function setSingleSignOnCookie(ctx: Koa.Context, sealedFlow: string): void {
  setConsoleCookie(ctx, SINGLE_SIGN_ON_COOKIE, sealedFlow, SINGLE_SIGN_ON_PATH, FLOW_MINUTES * 60);
}

export function clearSingleSignOnCookie(ctx: Koa.Context): void {
  setConsoleCookie(ctx, SINGLE_SIGN_ON_COOKIE, '', SINGLE_SIGN_ON_PATH, 0);
}

const MUTATIONS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * A mutation must come from a page of this origin: the Origin a browser sends must be Weft's own
 * (WEFT_PUBLIC_URL, or the origin the request was addressed to), and a browser that says the
 * request is cross-site is believed. A form posted by another site fails here, before anything
 * reads its body.
 */
export function refuseCrossSite(ctx: Koa.Context): void {
  if (!MUTATIONS.has(ctx.method)) return;
  const origin = ctx.get('Origin');
  const fetchSite = ctx.get('Sec-Fetch-Site');
  // (Koa 3's ctx.origin is the Origin header itself: the request's own origin is built from its Host.)
  const addressed = `${ctx.protocol}://${ctx.host}`;
  const ownOrigin = origin !== '' && (origin === new URL(publicUrl()).origin || origin === addressed);
  if (!ownOrigin || fetchSite === 'cross-site') {
    throw new PermissionError('cross_site_request', 'Console changes are accepted only from the console’s own pages.');
  }
}

const sameText = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

/** The session of the request's cookie, if it is live; `undefined` otherwise. */
export async function currentSession(deps: ServiceDependencies, ctx: Koa.Context): Promise<{ id: string; session: ConsoleSession } | undefined> {
  const id = ctx.cookies.get(SESSION_COOKIE);
  if (!id || id.length > 100) return undefined;
  const session = await sessionOf(deps.db, id);
  return session && { id, session };
}

const notSignedIn = () => new AuthenticationError('not_signed_in', 'Sign in to the console first.');

/**
 * The live session of a request that needs one: 401 without it, and for a mutation the session's
 * token in the X-Weft-Console-Token header (403 cross_site_request otherwise).
 */
export async function requireSession(deps: ServiceDependencies, ctx: Koa.Context): Promise<{ id: string; session: ConsoleSession }> {
  refuseCrossSite(ctx);
  const current = await currentSession(deps, ctx);
  if (!current) throw notSignedIn();
  if (MUTATIONS.has(ctx.method) && !sameText(ctx.get(CSRF_HEADER), csrfTokenOf(deps.encryptionKey, current.id))) {
    throw new PermissionError('cross_site_request', `Console changes carry the session’s token in the ${CSRF_HEADER} header.`);
  }
  return current;
}

/** The member a session acts as, as a principal; 401 workspace_not_chosen before one is picked. */
export function memberPrincipal(session: ConsoleSession): Principal {
  if (!session.member) throw new AuthenticationError('workspace_not_chosen', 'Pick a workspace first.');
  return principalOfMember(session.member);
}

/** A console route that runs one operation of the registry: only its path and how its answer is sent. */
export interface ConsoleOperationRoute {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  operation: Operation<any, any>;
  /** What of the answer this member's page is shown (member-access.ts decides), when not all of it. */
  shown?(body: unknown, principal: Principal): unknown;
  /** Request headers the operation reads, fixed by the console's page (the SPARQL editor asks for JSON results). */
  headers?: Record<string, string>;
}

/**
 * Mounts an operation route: the session, its member as the principal, the request counted
 * against the workspace's and the member's buckets, then the one invoke(), which checks the
 * operation's declared access and validates the request's parts as for every door but HTTP.
 */
export function mountOperation(router: Router, route: ConsoleOperationRoute, deps: ServiceDependencies): void {
  const declared = route.operation.input;
  if (route.path.includes(':') && !declared?.params) throw new Error(`${route.operation.name} declares no input.params: the console's path parameters are checked against them`);
  router[route.method](route.path, async (ctx) => {
    const { session } = await requireSession(deps, ctx);
    const principal = memberPrincipal(session);
    const limit = await admitMemberRequest(deps, principal);
    ctx.set('X-RateLimit-Limit', `${limit.limit}`);
    ctx.set('X-RateLimit-Remaining', `${Math.max(0, limit.remaining)}`);
    ctx.set('X-RateLimit-Reset', `${limit.resetSeconds}`);
    const caller: Caller = { deps, principal, door: 'console', requestId: String(ctx.state.requestId) };
    const params = { ...ctx.params };
    const body = MUTATIONS.has(ctx.method) && ctx.request.length ? (ctx.request as { body?: unknown }).body : undefined;
    // A body field only a tool sends is not taken here either (InputSchema.httpBody); invoke() checks the rest.
    if (declared?.httpBody) validateWithSchema(declared.httpBody, structuredClone(body ?? {}), 'request body');
    const input: RequestInput<any, any, any> = {
      ...(typeof params.project_id === 'string' ? { projectId: params.project_id } : {}),
      params,
      query: { ...ctx.query },
      // Protocol parameters as sent, for the operations whose protocol defines them (SPARQL 1.1).
      rawQuery: { ...ctx.query },
      ...(route.headers ? { headers: route.headers } : {}),
      body,
    };
    const reply = (await execute(caller, route.operation, input)).output as Reply;
    ctx.status = reply.status ?? 200;
    if (reply.headers) for (const name in reply.headers) ctx.set(name, reply.headers[name]);
    ctx.set('Cache-Control', 'no-store');
    if (reply.body !== undefined && ctx.status !== 204) {
      ctx.body = route.shown ? route.shown(reply.body, principal) : reply.body;
      // An answer the operation serialised itself (SPARQL results) keeps its media type.
      if (reply.contentType) ctx.type = reply.contentType;
    } else if (ctx.status !== 204) ctx.body = '';
  });
}
