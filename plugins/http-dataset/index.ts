import { DomainError } from '../../core/errors';
import { validateWithSchema } from '../../core/schema-validator';
import type { CapabilityRuntime, CheckResult } from '../capability';
import { definition, HttpDatasetTarget, READ_DEADLINE_MS, targetSchema } from './definition';
import { fetchPage, firstPosition, pageRequest, paginationOf, valueAtPath } from './pagination';
import { readRemoteRecords } from './read';
import { inferFields } from './records';
import { connectionFor, displayUrl, safeFetch } from './safe-fetch';
import { computeWindow } from './window';
import { validateInstallation, validateTarget } from './validation';

export { computeWindow, parseDuration, subtractDuration, formatWindowValue } from './window';
export type { ComputedWindow, Duration, WindowValue } from './window';
export { readRemoteRecords } from './read';
export type { ReadBudget, ReadContinuation } from './read';
export { connectionFor, safeFetch, isPublicAddress, isUnderBase } from './safe-fetch';
export type { HttpConnection } from './safe-fetch';
export { PAGES_PER_READ, READ_DEADLINE_MS } from './definition';
export type { HttpDatasetTarget, WindowSpec, PaginationSpec } from './definition';

const SAMPLE_SIZE = 100;

/** Stored targets were validated on save; checking again fills defaults and guards older rows. Works on a copy. */
function parseTarget(target: Record<string, unknown>): HttpDatasetTarget {
  return validateWithSchema<HttpDatasetTarget>(targetSchema, structuredClone(target), 'http_dataset target');
}

/** A first page as a check or discovery would read it: the window ends now. */
function firstPageWindow(target: HttpDatasetTarget) {
  return target.window && computeWindow({ window: target.window, syncTime: new Date() });
}

export const httpDatasetCapability: CapabilityRuntime = {
  definition,
  validateInstallation,
  validateTarget,

  /** Never throws: every failure, including an unexpected one, is a check result with a code. */
  async checkConnection(ctx, rawTarget): Promise<CheckResult> {
    const failed = (message: string, code: string, status: number | null = null): CheckResult => ({ ok: false, message, details: { status, code } });
    try {
      const target = parseTarget(rawTarget);
      const connection = connectionFor(ctx.installation);
      const request = pageRequest(target, firstPosition(paginationOf(target)), firstPageWindow(target));
      const response = await safeFetch(connection, request);
      const where = displayUrl(response.url);
      if (response.status < 200 || response.status > 299) return failed(`${where} answered HTTP ${response.status}.`, 'upstream_unavailable', response.status);
      let body: unknown;
      try {
        body = JSON.parse(response.text);
      } catch {
        return failed(`${where} did not answer with JSON.`, 'upstream_invalid_response', response.status);
      }
      const records = valueAtPath(body, target.response?.recordsPath);
      if (!Array.isArray(records)) return failed(`${where} answered, but no array of records is at the records path.`, 'upstream_invalid_response', response.status);
      return { ok: true, message: `${where} answered HTTP ${response.status} with ${records.length} records on the first page.`, details: { status: response.status } };
    } catch (error) {
      // Refused addresses, unreachable hosts and invalid answers are check results, not failures of the check itself.
      if (error instanceof DomainError) return failed(error.message, error.code);
      // Anything else is unexpected: its message may carry request details, so only its name is kept.
      const name = error instanceof Error && /^[A-Za-z]+$/.test(error.name) ? error.name : 'Error';
      return failed(`The connection check failed unexpectedly (${name}).`, 'check_failed');
    }
  },

  async discoverSchema(ctx, rawTarget) {
    const target = parseTarget(rawTarget);
    const page = await fetchPage(connectionFor(ctx.installation), target, firstPosition(paginationOf(target)), firstPageWindow(target));
    return inferFields(page.records.slice(0, SAMPLE_SIZE));
  },

  /** A records read has no pipeline state: since_last and rolling both read the lookback up to now. */
  async readRecords(ctx, rawTarget, query) {
    const connection = connectionFor(ctx.installation);
    // The read deadline never cuts a request short of the installation's own timeoutMs.
    const budget = { deadlineMs: Math.max(READ_DEADLINE_MS, connection.timeoutMs) };
    return readRemoteRecords(connection, parseTarget(rawTarget), query, { syncTime: new Date() }, budget);
  },
};
