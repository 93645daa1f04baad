import { createHash } from 'node:crypto';
import { DomainError, InputError } from '../../core/errors';
import type { RecordsPage, RecordsQuery, StopReason } from '../capability';
import { HttpDatasetTarget, PAGES_PER_READ, READ_DEADLINE_MS } from './definition';
import { fetchPage, firstPosition, nextPosition, PagePosition, paginationOf, RemotePage } from './pagination';
import { matchesAll, project, Row } from './records';
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

/** Bounds of one call (not of the whole read, which maxPages bounds across continuations). */
export interface ReadBudget {
  /** Upstream pages this call may fetch; default PAGES_PER_READ. */
  pagesPerRead?: number;
  /** Milliseconds this call may spend across its pages; default READ_DEADLINE_MS. */
  deadlineMs?: number;
  /** The caller's abort and heartbeat (CapabilityContext), handed to every request. */
  signal?: AbortSignal;
  heartbeat?: () => void;
}

const isDeadline = (error: unknown) => error instanceof DomainError && error.details?.reason === 'deadline';

/**
 * Fetches remote pages until `query.limit` records pass `query.where`, or a stop reason. `where` is
 * applied to every record and `select` to the returned page. Records keep the remote order (the
 * definition declares orderedReads false, so reads with orderBy are refused before they get here). `start` sets the window of a first read (records
 * reads pass the current time; a pipeline passes its sync time and last position).
 *
 * One call fetches at most `budget.pagesPerRead` pages and spends at most `budget.deadlineMs`:
 * when either runs out first it returns the records so far with a continuation (page_budget); a
 * call that runs out of time before any page has arrived fails with upstream_unavailable.
 */
export async function readRemoteRecords(
  connection: HttpConnection,
  target: HttpDatasetTarget,
  query: RecordsQuery,
  start: { syncTime: Date; lastPosition?: Date | string },
  budget: ReadBudget = {},
): Promise<RecordsPage> {
  const pagesPerRead = Math.max(1, budget.pagesPerRead ?? PAGES_PER_READ);
  const deadline = AbortSignal.timeout(Math.max(1, budget.deadlineMs ?? READ_DEADLINE_MS));
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
    records: rows.map((row) => project(row, query.select)),
    continuation,
    stopReason,
    pagesFetched,
    ...(window && { window: { start: window.start.toISOString(), end: window.end.toISOString() } }),
  });
  const resumeAt = (at: PagePosition, atPage: number, atSkip: number): ReadContinuation => ({
    ...state,
    position: at,
    pageNumber: atPage,
    skip: atSkip,
    seen: [...seen].slice(-SEEN_KEPT),
  });

  for (;;) {
    let page: RemotePage;
    try {
      // An expired deadline aborts the request at once; fetchPage reports it with reason "deadline".
      page = await fetchPage(connection, target, position, window, { deadline, signal: budget.signal, heartbeat: budget.heartbeat });
    } catch (error) {
      // Out of time after some progress: the page that did not arrive is where the client resumes.
      if (isDeadline(error) && pagesFetched > 0) return finish('page_budget', resumeAt(position, pageNumber, skip));
      throw error;
    }
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
    // This call's share of the read is spent: hand back what matched so far and where to go on.
    if (pagesFetched >= pagesPerRead || deadline.aborted) return finish('page_budget', resumeAt(next.position, pageNumber + 1, 0));
    position = next.position;
    pageNumber++;
    skip = 0;
  }
}
