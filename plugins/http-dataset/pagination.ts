import { InputError, PermissionError, UpstreamError } from '../../core/errors';
import type { StopReason } from '../capability';
import { DEFAULT_MAX_PAGES, HttpDatasetTarget, PaginationSpec, ParameterLocation } from './definition';
import { displayUrl, fetchJson, FetchOptions, HttpConnection, HttpRequest, isUnderBase, parseRemoteUrl, withoutInstallationParameters } from './safe-fetch';
import { Row, toRow } from './records';
import type { ComputedWindow } from './window';

/**
 * Where a remote page starts: the page number (page), the offset (offset), the cursor (cursor) or
 * the next link URL (link); null for the one page of `none` and the first cursor or link page.
 */
export type PagePosition = number | string | null;

export interface RemotePage {
  position: PagePosition;
  /** Final URL after redirects; relative next links resolve against it. */
  url: URL;
  /** HTTP status of the (2xx) answer. */
  status: number;
  body: unknown;
  records: Row[];
}

export function paginationOf(target: HttpDatasetTarget): PaginationSpec & { maxPages: number } {
  const pagination = target.pagination ?? { type: 'none' };
  return { ...pagination, maxPages: pagination.maxPages ?? DEFAULT_MAX_PAGES };
}

export function firstPosition(pagination: PaginationSpec): PagePosition {
  if (pagination.type === 'page') return pagination.start ?? 1;
  if (pagination.type === 'offset') return pagination.start ?? 0;
  return null;
}

/** Reads a dot path ("data.items", "links.next", "items.0.id"); an empty path is the value itself. */
function valueAtPath(value: unknown, path: string | undefined): unknown {
  if (!path) return value;
  let current = value;
  for (const segment of path.split('.')) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

/**
 * The request for one page. Fixed query parameters, window values and pagination parameters
 * (page size and limit on every request) go to the query string, or to the JSON body when their
 * location is body. A next link is followed as given: parameters are only added where it lacks them.
 */
function pageRequest(target: HttpDatasetTarget, position: PagePosition, window?: ComputedWindow): HttpRequest {
  const pagination = paginationOf(target);
  const method = target.request.method ?? 'GET';
  const isLink = pagination.type === 'link' && typeof position === 'string';
  const url = isLink ? linkUrl(position) : new URL(target.request.url);
  const body: Record<string, unknown> = {};
  const put = (location: ParameterLocation | undefined, name: string, value: string | number) => {
    if ((location ?? 'query') === 'body') body[name] = value;
    else if (!isLink || !url.searchParams.has(name)) url.searchParams.set(name, String(value));
  };
  for (const [name, value] of Object.entries(target.request.query ?? {})) put('query', name, value);
  if (window && target.window) {
    put(target.window.location, target.window.startParameter, window.startValue);
    if (target.window.endParameter) put(target.window.location, target.window.endParameter, window.endValue);
  }
  if (pagination.pageSizeParameter && pagination.pageSize !== undefined) put(pagination.location, pagination.pageSizeParameter, pagination.pageSize);
  if (pagination.limitParameter && pagination.limit !== undefined) put(pagination.location, pagination.limitParameter, pagination.limit);
  if (pagination.parameter && position !== null && pagination.type !== 'link') put(pagination.location, pagination.parameter, position);
  return { url, method, body: method === 'POST' ? body : undefined };
}

/** A stored link position: nextPosition wrote it from a parsed URL, so only a tampered or foreign continuation fails here. */
function linkUrl(position: string): URL {
  try {
    return new URL(position);
  } catch {
    throw new InputError('invalid_continuation', 'The continuation state is not one this capability issued.');
  }
}

/** Fetches one page and finds its records array (response.recordsPath). */
export async function fetchPage(
  connection: HttpConnection,
  target: HttpDatasetTarget,
  position: PagePosition,
  window?: ComputedWindow,
  options: FetchOptions = {},
): Promise<RemotePage> {
  const { url, status, body } = await fetchJson(connection, pageRequest(target, position, window), options);
  const records = valueAtPath(body, target.response?.recordsPath);
  if (!Array.isArray(records)) {
    const where = target.response?.recordsPath ? `at "${target.response.recordsPath}"` : 'as the response body';
    throw new UpstreamError('upstream_invalid_response', `${displayUrl(url)} did not answer with an array of records ${where}.`, { status });
  }
  return { position, url, status, body, records: records.map(toRow) };
}

/** The next position after `page`, or why there is none. Repeats and maxPages are the caller's checks. */
export function nextPosition(connection: HttpConnection, pagination: PaginationSpec, page: RemotePage): { position: PagePosition } | { stop: StopReason } {
  if (pagination.type === 'none') return { stop: 'exhausted' };
  if (page.records.length === 0) return { stop: 'empty_page' };
  switch (pagination.type) {
    case 'page':
      return { position: (page.position as number) + 1 };
    case 'offset':
      return { position: (page.position as number) + page.records.length };
    case 'cursor': {
      const cursor = valueAtPath(page.body, pagination.responsePath);
      if (cursor === undefined || cursor === null || cursor === '') return { stop: 'exhausted' };
      return { position: typeof cursor === 'object' ? JSON.stringify(cursor) : String(cursor) };
    }
    case 'link': {
      const link = valueAtPath(page.body, pagination.responsePath);
      if (typeof link !== 'string' || link === '') return { stop: 'exhausted' };
      // The installation's query parameters, when the API echoes them into its links, are not kept
      // in the position: it goes back to the client inside a cursor. Every request sets them again.
      const next = withoutInstallationParameters(connection, parseRemoteUrl(link, page.url, 'a next link'));
      // A next link comes from the remote API: it must not lead the request (and its headers) elsewhere.
      if (!isUnderBase(next, connection.baseUrl)) {
        throw new PermissionError('url_outside_base', `The next link ${displayUrl(next)} is not under the installation's base URL ${displayUrl(connection.baseUrl)}.`);
      }
      return { position: next.href };
    }
  }
}
