import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Router from '@koa/router';
import type Koa from 'koa';
import { SCOPES } from '../../core/scopes';
import { oidcSettings, publicUrl } from '../../core/config';
import { DomainError, InputError, NotFoundError } from '../../core/errors';
import { logger } from '../../core/logger';
import { PROBLEM_CONTENT_TYPE, problem } from '../../core/problem';
import type { ServiceDependencies } from '../../services/operations/context';
import { createApiKeyOperation, listApiKeysOperation, revokeApiKeyOperation } from '../../services/tenancy/api-key-operations';
import { listProjectsOperation } from '../../services/tenancy/project-operations';
import { createMemberInviteOperation, deleteMemberOperation, listMembersOperation, updateMemberOperation } from '../../services/tenancy/member-operations';
import { chooseMembership, ConsoleSession, csrfTokenOf, signIn, signOut } from '../../services/tenancy/console-sessions';
import { acceptInvite, describeInvite } from '../../services/tenancy/members';
import { getBillingMonthOperation, getOperationChargesOperation, getUsageAlertsOperation, getUsageOperation, listMeteredOperationsOperation, putUsageAlertsOperation } from '../../services/usage/operations';
import { listInvoicesOperation, openBillingPortalOperation, startBillingCheckoutOperation } from '../../services/usage/billing-operations';
import { getApiLimitsOperation, putApiLimitsOperation } from '../../services/tenancy/api-limit-operations';
import { beginSingleSignOn, completeSingleSignOn, isSingleSignOnRefusal, SINGLE_SIGN_ON_REFUSALS } from '../../services/tenancy/single-sign-on';
import {
  activatePipelineVersionOperation,
  commitPipelineVersionOperation,
  createPipelineBranchOperation,
  getPipelineDraftOperation,
  getPipelineOperation,
  listPipelinesOperation,
  listPipelineVersionsOperation,
  savePipelineDraftOperation,
  validatePipelineDraftOperation,
} from '../../services/pipelines/operations';
import { cancelRunOperation, createPipelineScheduleOperation, deletePipelineScheduleOperation, getRunOperation, launchRunOperation, listPipelineSchedulesOperation, listRunsOperation, updatePipelineScheduleOperation } from '../../services/pipelines/run-operations';
import { checkDataEndpointOperation, discoverDataEndpointSchemaOperation, getDataEndpointOperation, listDataEndpointsOperation, readDataEndpointRecordsOperation, validateDataEndpointOperation } from '../../services/endpoints/operations';
import { approveSourceWriteOperation, getDataEndpointSnapshotOperation, listSourceWritesOperation, rejectSourceWriteOperation } from '../../services/endpoints/write-operations';
import { activateOntologyPackageOperation, compileOntologyOperation, getOntologyOperation, listOntologyImportsOperation, listOntologyLinksOperation, listOntologyPackagesOperation, listOntologyShapesOperation, listOntologyTermsOperation } from '../../services/ontology/operations';
import { listReadBindingsOperation } from '../../services/ontology/binding-operations';
import { sparqlQueryGetOperation } from '../../services/ontology/sparql-operations';
import type { Principal } from '../../services/tenancy/access';
import { admits } from '../../services/operations/invoke';
import { seesTemporalUi } from '../../services/tenancy/member-access';
import { cancelQueryJobOperation, executeQueryOperation, getQueryOperation, listQueriesOperation, listQueryReleasesOperation, retireQueryReleaseOperation } from '../../services/ontology/query-operations';
import { consoleBuildDir } from './build-dir';
import { clearSessionCookie, clearSingleSignOnCookie, ConsoleOperationRoute, currentSession, memberPrincipal, mountOperation, refuseCrossSite, requireSession, setSecurityHeaders, setSessionCookie, setSingleSignOnCookie, SINGLE_SIGN_ON_COOKIE, SINGLE_SIGN_ON_PATH } from './door';
import { CONSOLE_PAGES, pagesFor } from './pages';

// The workspace console (issue 36), served by the API process at /console: its pages (a bundle
// built from console/web), the session routes (signing in is authentication, as a Bearer header
// is for /api/v1, not an operation), and its JSON routes under /console/api/, each of which runs
// one operation of the registry through invoke() as the signed-in member.

type RunShown = { workflow?: { webUiUrl?: string | null } };
const withoutTemporalUi = (run: RunShown) => (run.workflow ? { ...run, workflow: { ...run.workflow, webUiUrl: null } } : run);
/** Runs as a member's page shows them: the Temporal Web UI link for owners and admins only. */
function runsShown(body: unknown, principal: Principal): unknown {
  if (seesTemporalUi(principal)) return body;
  const answer = body as { run?: RunShown; runs?: RunShown[] };
  return { ...answer, ...(answer.run ? { run: withoutTemporalUi(answer.run) } : {}), ...(answer.runs ? { runs: answer.runs.map(withoutTemporalUi) } : {}) };
}

/** The console's operation routes: a sixth door to the same operations (not in the OpenAPI document). */
export const CONSOLE_OPERATION_ROUTES: readonly ConsoleOperationRoute[] = [
  { method: 'get', path: '/console/api/keys', operation: listApiKeysOperation },
  { method: 'post', path: '/console/api/keys', operation: createApiKeyOperation },
  { method: 'delete', path: '/console/api/keys/:key_id', operation: revokeApiKeyOperation },
  { method: 'get', path: '/console/api/projects', operation: listProjectsOperation },
  { method: 'get', path: '/console/api/members', operation: listMembersOperation },
  { method: 'post', path: '/console/api/members/invites', operation: createMemberInviteOperation },
  { method: 'patch', path: '/console/api/members/:member_id', operation: updateMemberOperation },
  { method: 'delete', path: '/console/api/members/:member_id', operation: deleteMemberOperation },
  { method: 'get', path: '/console/api/usage', operation: getUsageOperation },
  { method: 'get', path: '/console/api/usage/billing', operation: getBillingMonthOperation },
  { method: 'get', path: '/console/api/usage/operations', operation: listMeteredOperationsOperation },
  { method: 'get', path: '/console/api/usage/operations/:operation_id/charges', operation: getOperationChargesOperation },
  { method: 'get', path: '/console/api/usage/alerts', operation: getUsageAlertsOperation },
  { method: 'put', path: '/console/api/usage/alerts', operation: putUsageAlertsOperation },
  { method: 'get', path: '/console/api/billing/invoices', operation: listInvoicesOperation },
  { method: 'post', path: '/console/api/billing/checkout', operation: startBillingCheckoutOperation },
  { method: 'post', path: '/console/api/billing/portal', operation: openBillingPortalOperation },
  { method: 'get', path: '/console/api/api-limits', operation: getApiLimitsOperation },
  { method: 'put', path: '/console/api/api-limits', operation: putApiLimitsOperation },
  { method: 'get', path: '/console/api/projects/:project_id/pipelines', operation: listPipelinesOperation },
  { method: 'get', path: '/console/api/projects/:project_id/pipelines/:pipeline_id', operation: getPipelineOperation },
  { method: 'get', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/draft', operation: getPipelineDraftOperation },
  { method: 'put', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/draft', operation: savePipelineDraftOperation },
  { method: 'post', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/draft/validate', operation: validatePipelineDraftOperation },
  { method: 'get', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/versions', operation: listPipelineVersionsOperation },
  { method: 'post', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/versions', operation: commitPipelineVersionOperation },
  { method: 'post', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/versions/:version_id/activate', operation: activatePipelineVersionOperation },
  { method: 'post', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/branches', operation: createPipelineBranchOperation },
  // Schedules have no public route (SPEC 4.3): the operations the MCP pipeline_schedule_* tools run.
  { method: 'get', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/schedules', operation: listPipelineSchedulesOperation },
  { method: 'post', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/schedules', operation: createPipelineScheduleOperation },
  { method: 'patch', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/schedules/:schedule_id', operation: updatePipelineScheduleOperation },
  { method: 'delete', path: '/console/api/projects/:project_id/pipelines/:pipeline_id/schedules/:schedule_id', operation: deletePipelineScheduleOperation },
  { method: 'get', path: '/console/api/runs', operation: listRunsOperation, shown: runsShown },
  { method: 'get', path: '/console/api/runs/:run_id', operation: getRunOperation, shown: runsShown },
  { method: 'get', path: '/console/api/data-endpoints', operation: listDataEndpointsOperation },
  { method: 'get', path: '/console/api/data-endpoints/:endpoint_id', operation: getDataEndpointOperation },
  { method: 'get', path: '/console/api/data-endpoints/:endpoint_id/schema', operation: discoverDataEndpointSchemaOperation },
  { method: 'get', path: '/console/api/data-endpoints/:endpoint_id/snapshot', operation: getDataEndpointSnapshotOperation },
  // The records preview is the records read itself: the data guard, its cursors, its metering.
  { method: 'get', path: '/console/api/data-endpoints/:endpoint_id/records', operation: readDataEndpointRecordsOperation },
  { method: 'post', path: '/console/api/data-endpoints/:endpoint_id/check', operation: checkDataEndpointOperation },
  { method: 'post', path: '/console/api/data-endpoints/:endpoint_id/validate', operation: validateDataEndpointOperation },
  // Work a member starts records the member as its actor (services/tenancy/actors.ts).
  { method: 'post', path: '/console/api/runs', operation: launchRunOperation, shown: runsShown },
  { method: 'post', path: '/console/api/projects/:project_id/runs/:run_id/cancel', operation: cancelRunOperation, shown: runsShown },
  { method: 'get', path: '/console/api/data-endpoints/:endpoint_id/writes', operation: listSourceWritesOperation },
  { method: 'post', path: '/console/api/data-endpoints/:endpoint_id/writes/:action_id/approve', operation: approveSourceWriteOperation },
  { method: 'post', path: '/console/api/data-endpoints/:endpoint_id/writes/:action_id/reject', operation: rejectSourceWriteOperation },
  { method: 'get', path: '/console/api/projects/:project_id/ontology', operation: getOntologyOperation },
  { method: 'get', path: '/console/api/projects/:project_id/ontology/terms', operation: listOntologyTermsOperation },
  { method: 'get', path: '/console/api/projects/:project_id/ontology/links', operation: listOntologyLinksOperation },
  { method: 'get', path: '/console/api/projects/:project_id/ontology/shapes', operation: listOntologyShapesOperation },
  { method: 'get', path: '/console/api/projects/:project_id/ontology/imports', operation: listOntologyImportsOperation },
  { method: 'get', path: '/console/api/projects/:project_id/ontology/packages', operation: listOntologyPackagesOperation },
  { method: 'post', path: '/console/api/projects/:project_id/ontology/compile', operation: compileOntologyOperation },
  { method: 'post', path: '/console/api/projects/:project_id/ontology/activate', operation: activateOntologyPackageOperation },
  { method: 'get', path: '/console/api/projects/:project_id/ontology/read-bindings', operation: listReadBindingsOperation },
  // The SPARQL editor's queries: the protocol's GET (the same operation, grants and data guard as
  // GET /api/v1/…/ontology/sparql), answered as SPARQL JSON results for the page's table.
  { method: 'get', path: '/console/api/projects/:project_id/ontology/sparql', operation: sparqlQueryGetOperation, headers: { accept: 'application/sparql-results+json' } },
  { method: 'get', path: '/console/api/projects/:project_id/queries', operation: listQueriesOperation },
  { method: 'get', path: '/console/api/projects/:project_id/queries/:query_id', operation: getQueryOperation },
  { method: 'get', path: '/console/api/projects/:project_id/queries/:query_id/releases', operation: listQueryReleasesOperation },
  { method: 'patch', path: '/console/api/projects/:project_id/queries/:query_id/releases/:version', operation: retireQueryReleaseOperation },
  // Executing is the execute operation itself: its contract check, grants, metering, 202 and jobs.
  { method: 'post', path: '/console/api/projects/:project_id/queries/:query_id/execute', operation: executeQueryOperation },
  { method: 'delete', path: '/console/api/projects/:project_id/queries/:query_id/jobs/:job_id', operation: cancelQueryJobOperation },
];

/** What the page knows of its session: who, where, which pages, and the token its changes carry. */
function sessionView(encryptionKey: Buffer, id: string, session: ConsoleSession) {
  const principal = session.member ? memberPrincipal(session) : undefined;
  return {
    email: session.email,
    member: session.member && { id: session.member.id, name: session.member.name, email: session.member.email, role: session.member.role, workspaceId: session.member.workspaceId, workspaceName: session.member.workspaceName },
    memberships: session.memberships,
    // The operations of the console's routes this member's role admits, for pages to offer only those.
    operations: principal ? [...new Set(CONSOLE_OPERATION_ROUTES.filter((route) => admits(principal, route.operation)).map((route) => route.operation.name))] : [],
    // The navigation's pages, and the pages reached from them (a run from the Runs page).
    pages: principal ? pagesFor(principal).filter((page) => page.inNavigation !== false).map(({ name, path, built }) => ({ name, path, built })) : [],
    innerPages: principal ? pagesFor(principal).filter((page) => page.inNavigation === false).map(({ name, path, built }) => ({ name, path, built })) : [],
    scopes: SCOPES,
    csrfToken: csrfTokenOf(encryptionKey, id),
  };
}

const stringField = (body: unknown, name: string): string => {
  const value = (body as Record<string, unknown> | undefined)?.[name];
  if (typeof value !== 'string' || value === '') throw new InputError('field_required', `Send ${name}.`, [{ path: `/${name}`, message: 'is required' }]);
  return value;
};

function sessionRoutes(router: Router, deps: ServiceDependencies): void {
  const { db, encryptionKey } = deps;
  router.get('/console/api/session', async (ctx) => {
    const current = await requireSession(deps, ctx);
    ctx.set('Cache-Control', 'no-store');
    ctx.body = sessionView(encryptionKey, current.id, current.session);
  });
  router.post('/console/api/session', async (ctx) => {
    refuseCrossSite(ctx);
    const body = (ctx.request as { body?: unknown }).body;
    const { sessionId, session } = await signIn(db, { email: stringField(body, 'email'), password: stringField(body, 'password'), clientAddress: ctx.ip });
    setSessionCookie(ctx, sessionId);
    ctx.set('Cache-Control', 'no-store');
    ctx.status = 201;
    ctx.body = sessionView(encryptionKey, sessionId, session);
  });
  router.put('/console/api/session/member', async (ctx) => {
    const current = await requireSession(deps, ctx);
    await chooseMembership(db, current.session, stringField((ctx.request as { body?: unknown }).body, 'memberId'));
    const { session } = (await currentSession(deps, ctx))!;
    ctx.body = sessionView(encryptionKey, current.id, session);
  });
  router.delete('/console/api/session', async (ctx) => {
    const current = await requireSession(deps, ctx);
    await signOut(db, current.session);
    clearSessionCookie(ctx);
    ctx.status = 204;
  });
  // The invite's token travels in bodies only (the link carries it in its fragment).
  router.post('/console/api/invite', async (ctx) => {
    refuseCrossSite(ctx);
    const invite = await describeInvite(db, stringField((ctx.request as { body?: unknown }).body, 'token'));
    if (!invite) throw new NotFoundError('invite', 'This invite link is unknown, used or expired: ask an owner or admin for a new one.');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = invite;
  });
  router.post('/console/api/invite/accept', async (ctx) => {
    refuseCrossSite(ctx);
    const body = (ctx.request as { body?: unknown }).body;
    const accepted = await db.transaction((trx) => acceptInvite(trx, stringField(body, 'token'), stringField(body, 'password')));
    ctx.body = { email: accepted.email };
  });
}

const SINGLE_SIGN_ON_CALLBACK = `${SINGLE_SIGN_ON_PATH}/callback`;

/**
 * Single sign-on (OpenID Connect, when WEFT_OIDC_* is set): the page's button navigates to the
 * start route, which sends the browser to the provider with the flow sealed in a cookie; the
 * provider sends it back to the callback, which opens a session as password sign-in does, or
 * returns to the sign-in page with the refusal's code for it to explain. These are navigations,
 * not the page's fetches, so they answer redirects rather than problems.
 */
function singleSignOnRoutes(router: Router, deps: ServiceDependencies): void {
  const { db, encryptionKey } = deps;
  const refuse = (ctx: Koa.Context, error: unknown) => {
    if (!(error instanceof DomainError) || !isSingleSignOnRefusal(error.code)) throw error;
    // The provider's side of a failure, for the operator: what the library said, never a token or the secret.
    const cause = error.cause as { name?: string; code?: string; message?: string; error?: string } | undefined;
    if (cause) logger.warn({ requestId: ctx.state.requestId, code: error.code, cause: { name: cause.name, code: cause.code, message: cause.message, providerError: cause.error } }, 'single sign-on failed');
    ctx.redirect(`/console/sign-in?refused=${error.code}`);
  };
  // What the sign-in page offers, and the refusal it was sent back with, in the server's words.
  router.get('/console/api/sign-in', (ctx) => {
    const refused = typeof ctx.query.refused === 'string' && isSingleSignOnRefusal(ctx.query.refused) ? ctx.query.refused : undefined;
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { singleSignOn: oidcSettings() !== undefined, ...(refused ? { refusal: { code: refused, message: SINGLE_SIGN_ON_REFUSALS[refused] } } : {}) };
  });
  router.get(SINGLE_SIGN_ON_PATH, async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    const settings = oidcSettings();
    if (!settings) return ctx.redirect('/console/sign-in?refused=sso_not_configured');
    try {
      const { authorizationUrl, sealedFlow } = await beginSingleSignOn(settings, encryptionKey, `${publicUrl()}${SINGLE_SIGN_ON_CALLBACK}`);
      setSingleSignOnCookie(ctx, sealedFlow);
      ctx.redirect(authorizationUrl);
    } catch (error) {
      refuse(ctx, error);
    }
  });
  router.get(SINGLE_SIGN_ON_CALLBACK, async (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    // A flow is good for one return, whatever its outcome.
    const sealedFlow = ctx.cookies.get(SINGLE_SIGN_ON_COOKIE);
    clearSingleSignOnCookie(ctx);
    const settings = oidcSettings();
    if (!settings) return ctx.redirect('/console/sign-in?refused=sso_not_configured');
    // The address the provider was given, with what it sent back.
    const callbackUrl = new URL(`${publicUrl()}${SINGLE_SIGN_ON_CALLBACK}`);
    callbackUrl.search = ctx.querystring;
    try {
      const { sessionId, session } = await completeSingleSignOn(db, settings, encryptionKey, callbackUrl, sealedFlow);
      setSessionCookie(ctx, sessionId);
      ctx.redirect(session.member ? '/console' : '/console/workspaces');
    } catch (error) {
      refuse(ctx, error);
    }
  });
}

const ASSET_TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml', '.png': 'image/png', '.ico': 'image/x-icon', '.woff2': 'font/woff2' };

function pageRoutes(router: Router, deps: ServiceDependencies): void {
  const dir = consoleBuildDir();
  const sendIndex = (ctx: Koa.Context, status = 200) => {
    const file = path.join(dir, 'index.html');
    if (!existsSync(file)) {
      // A refusal stays a refusal without the bundle.
      ctx.status = status === 200 ? 503 : status;
      ctx.type = PROBLEM_CONTENT_TYPE;
      ctx.body = status === 200
        ? problem(503, 'console_not_built', 'The console has not been built: `npm start` builds it (or `npm run build`).', String(ctx.state.requestId))
        : problem(status, 'page_denied', 'Your role cannot use this page.', String(ctx.state.requestId));
      return;
    }
    // Read each time: a rebuilt bundle (new asset names) is served at once.
    const indexHtml = readFileSync(file, 'utf8');
    ctx.status = status;
    ctx.type = 'text/html; charset=utf-8';
    ctx.set('Cache-Control', 'no-store');
    ctx.body = indexHtml;
  };
  for (const open of ['/console', '/console/sign-in', '/console/invite', '/console/workspaces']) router.get(open, (ctx) => sendIndex(ctx));
  for (const page of CONSOLE_PAGES) {
    // A page the member's role cannot use answers 403, as its operation would.
    router.get(page.path, async (ctx) => {
      const current = await currentSession(deps, ctx);
      const allowed = !current?.session.member || pagesFor(memberPrincipal(current.session)).includes(page);
      sendIndex(ctx, allowed ? 200 : 403);
    });
  }
  router.get('/console/assets/:file', (ctx) => {
    const name = String(ctx.params.file);
    const type = ASSET_TYPES[path.extname(name)];
    const file = path.join(dir, 'assets', name);
    if (!/^[A-Za-z0-9._-]+$/.test(name) || !type || !existsSync(file)) return;
    ctx.type = type;
    // Vite names assets by their content: a changed asset is a new name.
    ctx.set('Cache-Control', 'public, max-age=31536000, immutable');
    ctx.body = readFileSync(file);
  });
}

/** The console as one middleware for every path under /console. */
export function consoleMiddleware(deps: ServiceDependencies): Koa.Middleware {
  const router = new Router();
  sessionRoutes(router, deps);
  singleSignOnRoutes(router, deps);
  for (const route of CONSOLE_OPERATION_ROUTES) mountOperation(router, route, deps);
  pageRoutes(router, deps);
  const dispatch = router.routes() as unknown as Koa.Middleware;
  return (ctx, next) => {
    setSecurityHeaders(ctx);
    return dispatch(ctx, next);
  };
}

export const isConsolePath = (path: string): boolean => path === '/console' || path.startsWith('/console/');
