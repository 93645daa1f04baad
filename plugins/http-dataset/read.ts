import { createHash } from 'node:crypto';
import { InputError } from '../../core/errors';
import type { RecordsPage, RecordsQuery, StopReason } from '../capability';
import type { HttpDatasetTarget } from './definition';
import { fetchPage, firstPosition, nextPosition, PagePosition, paginationOf } from './pagination';
import { matchesAll, project, Row, sortRows } from './records';
import type { HttpConnection } from './safe-fetch';
import { computeWindow } from './window';

/**
 * Where a read resumes: the remote page to (re)request and how many of its records were already
 * consumed, so no record is lost or returned twice across pages. The sync time (and position)
 * pin the window, so every page of one read asks for the same window.
 */
export interface ReadContinuation {
  syncTime: string;
  lastPosition?: string;
  position: PagePosition;
  /** 1-based ordinal of `position`'s page in the whole read, checked against maxPages. */
  pageNumber: number;
  skip: number;
  /** Digests of the latest cursors or links followed, to detect a remote API that loops. */
  seen: string[];
}

/** Enough to catch an API that loops over a short cycle, without growing the cursor the client carries. */
const SEEN_KEPT = 100;

const digest = (value: string) => createHash('sha256').update(value).digest('base64url').slice(0, 16);

function parseContinuation(after: unknown): ReadContinuation {
  const state = after as Partial<ReadContinuation> | null;
  const valid = state !== null && typeof state === 'object'
    && typeof state.syncTime === 'string' && !Number.isNaN(Date.parse(state.syncTime))
    && (state.lastPosition === undefined || typeof state.lastPosition === 'string')
    && (state.position === null || typeof state.position === 'number' || typeof state.position === 'string')
    && Number.isInteger(state.pageNumber) && (state.pageNumber as number) >= 1
    && Number.isInteger(state.skip) && (state.skip as number) >= 0
    && Array.isArray(state.seen) && state.seen.every((entry) => typeof entry === 'string');
  if (!valid) throw new InputError('invalid_continuation', 'The continuation state is not one this capability issued.');
  return state as ReadContinuation;
}

/**
 * Fetches remote pages until `query.limit` records pass `query.where`, or a stop reason. `where` is
 * applied to every record, while `orderBy` and `select` apply within the returned page only: remote
 * records keep the remote order across pages. `start` sets the window of a first read (records
 * reads pass the current time; a pipeline passes its sync time and last position).
 */
export async function readRemoteRecords(
  connection: HttpConnection,
  target: HttpDatasetTarget,
  query: RecordsQuery,
  start: { syncTime: Date; lastPosition?: Date | string },
): Promise<RecordsPage> {
  const pagination = paginationOf(target);
  const tracksRepeats = pagination.type === 'cursor' || pagination.type === 'link';
  const state: ReadContinuation = query.after === undefined || query.after === null
    ? {
      syncTime: start.syncTime.toISOString(),
      lastPosition: start.lastPosition === undefined ? undefined : new Date(start.lastPosition).toISOString(),
      position: firstPosition(pagination),
      pageNumber: 1,
      skip: 0,
      seen: [],
    }
    : parseContinuation(query.after);
  const window = target.window && computeWindow({ window: target.window, syncTime: new Date(state.syncTime), lastPosition: state.lastPosition });
  const limit = Math.max(1, query.limit);
  const seen = new Set(state.seen);
  const rows: Row[] = [];
  let { position, pageNumber, skip } = state;
  let pagesFetched = 0;

  const finish = (stopReason: StopReason, continuation: ReadContinuation | null): RecordsPage => ({
    records: sortRows(rows, query.orderBy).map((row) => project(row, query.select)),
    continuation,
    stopReason,
    pagesFetched,
  });
  const resumeAt = (at: PagePosition, atPage: number, atSkip: number): ReadContinuation => ({
    ...state,
    position: at,
    pageNumber: atPage,
    skip: atSkip,
    seen: [...seen].slice(-SEEN_KEPT),
  });

  for (;;) {
    const page = await fetchPage(connection, target, position, window);
    pagesFetched++;
    // The first link page has no position: remember its URL so a self-link counts as a repeat.
    if (pagination.type === 'link' && position === null) seen.add(digest(page.url.href));
    for (let index = skip; index < page.records.length; index++) {
      if (matchesAll(page.records[index], query.where)) rows.push(page.records[index]);
      if (rows.length >= limit && index + 1 < page.records.length) return finish('limit', resumeAt(position, pageNumber, index + 1));
    }
    const next = nextPosition(connection, pagination, page);
    if ('stop' in next) return finish(next.stop, null);
    if (tracksRepeats) {
      const key = digest(String(next.position));
      if (seen.has(key)) return finish('repeated_cursor', null);
      seen.add(key);
    }
    // Reported as max_pages with no continuation: the bound truncates the read, visibly.
    if (pageNumber >= pagination.maxPages) return finish('max_pages', null);
    if (rows.length >= limit) return finish('limit', resumeAt(next.position, pageNumber + 1, 0));
    position = next.position;
    pageNumber++;
    skip = 0;
  }
}
