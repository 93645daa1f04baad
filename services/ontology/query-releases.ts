import { ApplicationFailure } from '@temporalio/common';
import { ConflictError, NotFoundError, PermissionError, restoredError } from '../../core/errors';
import { temporalSettings } from '../../core/temporal-config';
import type { Db, Executor } from '../../db/connection';
import { BreakingChange, Project, PublishedQuery, QueryRelease, QueryVersion } from '../../db/models';
import { releaseWorkflowId } from '../../workflows/names';
import type { OperationContext } from '../operations/context';
import { requireQuery, validateDefinition } from './published-queries';
import { contractChanges } from './query-contract-changes';
import { presentRelease, type ReleaseView } from './presenters';

// Releases pin a query version under a number (SPEC 2.5, 3.4): a Temporal workflow validates the
// version, diffs its contracts against the previous release and activates it. A retired release no longer executes.

export async function listReleases(ctx: OperationContext, queryId: string) {
  const { db, project } = ctx;
  await requireQuery(db, project, queryId);
  return { releases: (await QueryRelease.query(db).where({ queryId }).orderBy('version', 'desc')).map(presentRelease) };
}

/** The diff a release would publish, without publishing (also the workflow's diff step, so (db, …): it runs with no key). */
export async function releaseDiff(db: Executor, queryId: string, queryVersionId: string): Promise<{ previous: number | null; breakingChanges: BreakingChange[] }> {
  const version = await QueryVersion.query(db).findOne({ id: queryVersionId, queryId });
  if (!version) throw new NotFoundError('query_version', 'No version with this id of this query.');
  const previous = await QueryRelease.query(db).where({ queryId }).orderBy('version', 'desc').first();
  if (!previous) return { previous: null, breakingChanges: [] };
  const before = (await QueryVersion.query(db).findById(previous.queryVersionId))!;
  return { previous: previous.version, breakingChanges: contractChanges(before.definition, version.definition) };
}

export interface PublishInput {
  expectedQueryVersionId: string;
  acknowledgeBreakingChanges?: boolean;
}

/** Checks a publish request before the workflow runs: the expected version is the current one. */
export async function checkPublish(ctx: OperationContext, queryId: string, input: PublishInput) {
  const { db, principal, project } = ctx;
  const query = await requireQuery(db, project, queryId);
  if (principal.memberRole === undefined) throw new PermissionError('actor_not_accountable', 'Publishing needs an accountable member.');
  if (query.currentVersionId !== input.expectedQueryVersionId) {
    throw new ConflictError('query_version_stale', `The query has changed: its current version is ${query.currentVersionId}, not ${input.expectedQueryVersionId}. Review it and publish the current version.`, { currentQueryVersionId: query.currentVersionId });
  }
  return query;
}

/** The workflow's activate step: the next numeric release of the expected version, in one transaction. */
export async function activateRelease(db: Db, args: { queryId: string; queryVersionId: string; memberId: string; acknowledge: boolean; workflowId: string }): Promise<ReleaseView> {
  return db.transaction(async (trx) => {
    const query = await PublishedQuery.query(trx).findById(args.queryId).forUpdate();
    if (!query) throw new NotFoundError('query', 'The query was deleted.');
    const done = await QueryRelease.query(trx).findOne({ queryId: args.queryId, workflowId: args.workflowId });
    if (done) return presentRelease(done);
    if (query.currentVersionId !== args.queryVersionId) throw new ConflictError('query_version_stale', `The query changed while publishing: its current version is ${query.currentVersionId}.`, { currentQueryVersionId: query.currentVersionId });
    const { breakingChanges } = await releaseDiff(trx, args.queryId, args.queryVersionId);
    if (breakingChanges.length && !args.acknowledge) {
      throw new ConflictError('breaking_changes', `This release breaks consumers: ${breakingChanges.map((c) => c.message).join('; ')}. Publish again with acknowledgeBreakingChanges true to accept.`, { breakingChanges });
    }
    const last = await QueryRelease.query(trx).where({ queryId: args.queryId }).max('version as max').first() as unknown as { max: number | null };
    const release = await QueryRelease.query(trx).insertAndFetch({ queryId: args.queryId, version: (last?.max ?? 0) + 1, queryVersionId: args.queryVersionId, status: 'published', breakingChanges, publishedByMemberId: args.memberId, workflowId: args.workflowId });
    return presentRelease(release);
  });
}

export async function retireRelease(ctx: OperationContext, queryId: string, version: number) {
  const { db, project } = ctx;
  await requireQuery(db, project, queryId);
  const release = await QueryRelease.query(db).findOne({ queryId, version }).forUpdate();
  if (!release) throw new NotFoundError('release', `The query has no release ${version}.`);
  if (release.status === 'retired') return presentRelease(release);
  return presentRelease(await release.$query(db).patchAndFetch({ status: 'retired', retiredAt: new Date() }));
}

/** The workflow's validate step: the version still compiles against the active ontology and its bindings. */
export async function checkReleaseVersion(db: Db, queryId: string, queryVersionId: string): Promise<{ ok: true }> {
  const query = await PublishedQuery.query(db).findById(queryId);
  const version = await QueryVersion.query(db).findOne({ id: queryVersionId, queryId });
  if (!query || !version) throw new NotFoundError('query_version', 'The query or its version was deleted.');
  const project = (await Project.query(db).findById(query.projectId))!;
  await validateDefinition(db, project, { name: query.name, ...version.definition });
  return { ok: true };
}

/**
 * POST releases: a Temporal workflow validates, diffs and activates; the request waits for it.
 * A breaking change without acknowledgement, or a stale expected version, fails with 409.
 */
export async function publishRelease(ctx: OperationContext, queryId: string, input: PublishInput) {
  const { deps, principal, requestId } = ctx;
  await checkPublish(ctx, queryId, input);
  const workflowId = releaseWorkflowId(queryId, input.expectedQueryVersionId, requestId);
  try {
    return (await deps.temporal.workflow.execute('publishReleaseWorkflow', {
      workflowId,
      taskQueue: temporalSettings().taskQueues.main,
      args: [{ queryId, queryVersionId: input.expectedQueryVersionId, memberId: principal.memberId, acknowledge: input.acknowledgeBreakingChanges === true }],
    })) as ReleaseView;
  } catch (error) {
    const cause = (error as { cause?: { cause?: unknown } }).cause?.cause ?? (error as { cause?: unknown }).cause;
    if (cause instanceof ApplicationFailure && cause.type) {
      const evidence = cause.details?.[0] as { details?: Record<string, unknown> } | undefined;
      throw restoredError({ kind: cause.type === 'not_found' ? 'not_found' : 'conflict', code: cause.type, message: cause.message, details: evidence?.details });
    }
    throw error;
  }
}
