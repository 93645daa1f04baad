import { DomainError } from '../../core/errors';
import { validateWithSchema } from '../../core/schema-validator';
import type { CapabilityRuntime } from '../capability';
import { definition, HttpDatasetTarget, targetSchema } from './definition';
import { fetchPage, firstPosition, pageRequest, paginationOf, valueAtPath } from './pagination';
import { readRemoteRecords } from './read';
import { inferFields } from './records';
import { connectionFor, displayUrl, safeFetch } from './safe-fetch';
import { computeWindow } from './window';
import { validateInstallation, validateTarget } from './validation';

export { computeWindow, parseDuration, subtractDuration, formatWindowValue } from './window';
export type { ComputedWindow, Duration, WindowValue } from './window';
export { readRemoteRecords } from './read';
export type { ReadContinuation } from './read';
export { connectionFor, safeFetch, isPublicAddress, isUnderBase } from './safe-fetch';
export type { HttpConnection } from './safe-fetch';
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

  async checkConnection(ctx, rawTarget) {
    const target = parseTarget(rawTarget);
    const connection = connectionFor(ctx.installation);
    const request = pageRequest(target, firstPosition(paginationOf(target)), firstPageWindow(target));
    try {
      const response = await safeFetch(connection, request);
      const where = displayUrl(response.url);
      if (response.status < 200 || response.status > 299) return { ok: false, message: `${where} answered HTTP ${response.status}.`, details: { status: response.status } };
      let body: unknown;
      try {
        body = JSON.parse(response.text);
      } catch {
        return { ok: false, message: `${where} did not answer with JSON.`, details: { status: response.status } };
      }
      const records = valueAtPath(body, target.response?.recordsPath);
      if (!Array.isArray(records)) return { ok: false, message: `${where} answered, but no array of records is at the records path.`, details: { status: response.status } };
      return { ok: true, message: `${where} answered HTTP ${response.status} with ${records.length} records on the first page.`, details: { status: response.status } };
    } catch (error) {
      // Refused addresses and unreachable hosts are check results, not failures of the check itself.
      if (error instanceof DomainError) return { ok: false, message: error.message, details: { status: null, code: error.code } };
      throw error;
    }
  },

  async discoverSchema(ctx, rawTarget) {
    const target = parseTarget(rawTarget);
    const page = await fetchPage(connectionFor(ctx.installation), target, firstPosition(paginationOf(target)), firstPageWindow(target));
    return inferFields(page.records.slice(0, SAMPLE_SIZE));
  },

  /** A records read has no pipeline state: since_last and rolling both read the lookback up to now. */
  async readRecords(ctx, rawTarget, query) {
    return readRemoteRecords(connectionFor(ctx.installation), parseTarget(rawTarget), query, { syncTime: new Date() });
  },
};
