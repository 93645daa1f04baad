import { DomainError } from '../../core/errors';
import { scrubSecrets } from '../../core/secrets';
import { validateWithSchema } from '../../core/schema-validator';
import type { CapabilityRuntime, CheckResult, InstallationContext } from '../capability';
import { definition, HttpDatasetCredentials, HttpDatasetTarget, READ_DEADLINE_MS, targetSchema } from './definition';
import { fetchPage, firstPosition, paginationOf, RemotePage } from './pagination';
import { readRemoteRecords } from './read';
import { inferFields } from './records';
import { connectionFor, displayUrl } from './safe-fetch';
import { computeWindow } from './window';
import { validateInstallation, validateTarget } from './validation';

export { computeWindow } from './window';
export { readRemoteRecords } from './read';
export { connectionFor, safeFetch, isUnderBase } from './safe-fetch';
export { PAGES_PER_READ } from './definition';

const SAMPLE_SIZE = 100;

/** Stored targets were validated on save; checking again fills defaults and guards older rows. Works on a copy. */
function parseTarget(target: Record<string, unknown>): HttpDatasetTarget {
  return validateWithSchema<HttpDatasetTarget>(targetSchema, structuredClone(target), 'http_dataset target');
}

/**
 * The installation's credentials (header values, query parameter values), to cut out of every
 * message this capability produces. Requests never put them in messages, but the remote side
 * controls redirect targets, next links and the final URL of a request, which messages name: an
 * API that echoes a token into a path ("/session/<token>/…") would otherwise put it in the answer
 * to the client, the run's stored error and the worker's logs.
 */
function credentialValues(installation: InstallationContext): string[] {
  const credentials = installation.credentials as HttpDatasetCredentials;
  return [...Object.values(credentials.headers ?? {}), ...Object.values(credentials.queryParameters ?? {})];
}

/** Runs a remote call, scrubbing the installation's credentials out of whatever it throws. */
async function scrubbing<T>(installation: InstallationContext, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw scrubSecrets(error, credentialValues(installation));
  }
}

/** The first page as a check or discovery reads it: the window ends now. */
function fetchFirstPage(installation: InstallationContext, target: HttpDatasetTarget): Promise<RemotePage> {
  const window = target.window && computeWindow({ window: target.window, syncTime: new Date() });
  return fetchPage(connectionFor(installation), target, firstPosition(paginationOf(target)), window);
}

/**
 * The resolved URL the records come from: the request URL with its fixed query parameters, sorted,
 * and without the parameters a read varies (window and paging), so two endpoints paging or
 * windowing the same dataset differently are the same data. The installation's credential
 * parameters are not part of it.
 */
function dataIdentity(rawTarget: Record<string, unknown>): string {
  // The target was validated against its installation's contract (which may be another version's): read, not parsed again.
  const target = rawTarget as unknown as HttpDatasetTarget;
  const url = new URL(target.request.url);
  url.hash = '';
  for (const [name, value] of Object.entries(target.request.query ?? {})) url.searchParams.set(name, value);
  const pagination = target.pagination;
  const varying = [target.window?.startParameter, target.window?.endParameter, pagination?.parameter, pagination?.pageSizeParameter, pagination?.limitParameter];
  for (const name of varying) if (name) url.searchParams.delete(name);
  url.searchParams.sort();
  return `http_dataset:${url.toString()}`;
}

export const httpDatasetCapability: CapabilityRuntime = {
  definition,
  dataIdentity,
  validateInstallation,
  validateTarget,

  /** The first page as a records read would read it; every failure is a check result (see check), credentials scrubbed. */
  async checkConnection(ctx, rawTarget): Promise<CheckResult> {
    return scrubSecrets(await check(ctx.installation, rawTarget), credentialValues(ctx.installation));
  },

  async discoverSchema(ctx, rawTarget) {
    const target = parseTarget(rawTarget);
    const page = await scrubbing(ctx.installation, () => fetchFirstPage(ctx.installation, target));
    return { fields: inferFields(page.records.slice(0, SAMPLE_SIZE)), primaryKey: target.primaryKeys ?? [] };
  },

  /**
   * A records read has no pipeline state: since_last and rolling both read the lookback up to now.
   * A pipeline read passes its run's sync time and the source's last committed position.
   */
  async readRecords(ctx, rawTarget, query) {
    const connection = connectionFor(ctx.installation);
    // The read deadline never cuts a request short of the installation's own timeoutMs.
    const budget = { deadlineMs: Math.max(READ_DEADLINE_MS, connection.timeoutMs), signal: ctx.signal, heartbeat: ctx.heartbeat };
    const start = query.incremental
      ? { syncTime: new Date(query.incremental.syncTime), lastPosition: query.incremental.lastPosition }
      : { syncTime: new Date() };
    return scrubbing(ctx.installation, () => readRemoteRecords(connection, parseTarget(rawTarget), query, start, budget));
  },
};

/** Reads the first page as a records read would. Never throws: every failure, including an unexpected one, is a check result with a code (and the HTTP status when there was one). */
async function check(installation: InstallationContext, rawTarget: Record<string, unknown>): Promise<CheckResult> {
  const failed = (message: string, code: string, status: number | null = null): CheckResult => ({ ok: false, message, details: { status, code } });
  try {
    const page = await fetchFirstPage(installation, parseTarget(rawTarget));
    return { ok: true, message: `${displayUrl(page.url)} answered HTTP ${page.status} with ${page.records.length} records on the first page.`, details: { status: page.status } };
  } catch (error) {
    // Refused addresses, unreachable hosts and invalid answers are check results, not failures of the check itself.
    if (error instanceof DomainError) return failed(error.message, error.code, typeof error.details?.status === 'number' ? error.details.status : null);
    // Anything else is unexpected: its message may carry request details, so only its name is kept.
    const name = error instanceof Error && /^[A-Za-z]+$/.test(error.name) ? error.name : 'Error';
    return failed(`The connection check failed unexpectedly (${name}).`, 'check_failed');
  }
}
