import type { OntologyBranch, OntologyPackage, OntologyVersion, PublishedQuery, QueryExecution, QueryRelease, QueryVersion, ReadBinding } from '../../db/models';

// The views the ontology, query and binding operations answer with. A presenter shapes rows and
// what its service read for them, and queries nothing.

export const presentOntologyVersion = (v: OntologyVersion, withDefinition: boolean) => ({
  id: v.id,
  number: v.number,
  branchName: v.branchName,
  parentVersionId: v.parentVersionId,
  message: v.message,
  createdByMemberId: v.createdByMemberId,
  createdAt: v.createdAt.toISOString(),
  ...(withDefinition ? { definition: v.definition } : {}),
});

export const presentBranch = (b: OntologyBranch) => ({ name: b.name, headVersionId: b.headVersionId, createdByMemberId: b.createdByMemberId, createdAt: b.createdAt.toISOString(), updatedAt: b.updatedAt.toISOString() });

export function presentPackage(p: OntologyPackage) {
  return {
    id: p.id,
    contentHash: p.contentHash,
    versionId: p.versionId,
    baseIri: p.baseIri,
    tripleCount: p.tripleCount,
    counts: p.counts,
    compiledByMemberId: p.compiledByMemberId,
    compiledAt: p.compiledAt.toISOString(),
  };
}

export type PackageView = ReturnType<typeof presentPackage>;

const presentQueryVersion = (v: QueryVersion) => ({ id: v.id, number: v.number, definition: v.definition, requiredReadPermissions: v.requiredReadPermissions, createdByMemberId: v.createdByMemberId, createdAt: v.createdAt.toISOString() });

/** A query with its current version and the release executed without ?version= (both read by the service). */
export function presentQuery(query: PublishedQuery, version: QueryVersion | undefined, selected: QueryRelease | undefined) {
  return {
    id: query.id,
    projectId: query.projectId,
    name: query.name,
    version: version ? presentQueryVersion(version) : null,
    selectedRelease: selected?.version ?? null,
    createdByMemberId: query.createdByMemberId,
    createdAt: query.createdAt.toISOString(),
    updatedAt: query.updatedAt.toISOString(),
  };
}

export type QueryView = ReturnType<typeof presentQuery>;

export function presentRelease(r: QueryRelease) {
  return { version: r.version, queryVersionId: r.queryVersionId, status: r.status, breakingChanges: r.breakingChanges, publishedByMemberId: r.publishedByMemberId, workflowId: r.workflowId, publishedAt: r.publishedAt.toISOString(), retiredAt: r.retiredAt?.toISOString() ?? null };
}

export type ReleaseView = ReturnType<typeof presentRelease>;

export const presentExecution = (e: QueryExecution) => ({ id: e.id, projectId: e.projectId, queryId: e.queryId, release: e.releaseVersion, apiKeyId: e.apiKeyId, memberId: e.memberId, inputHash: e.inputHash, mode: e.mode, status: e.status, durationMs: e.durationMs, rowCount: e.rowCount, jobId: e.jobId, createdAt: e.createdAt.toISOString() });

/** A binding with the endpoints its grants now guard: every endpoint over its endpoint's data. */
export function presentBinding(binding: ReadBinding, guardedEndpointIds: string[]) {
  return {
    id: binding.id,
    projectId: binding.projectId,
    ontologyPackageId: binding.ontologyPackageId,
    termId: binding.termId,
    dataEndpointId: binding.dataEndpointId,
    mapping: binding.mapping,
    requiredReadPermissions: binding.requiredReadPermissions,
    guardedEndpointIds,
    status: binding.status,
    createdByMemberId: binding.createdByMemberId,
    createdAt: binding.createdAt.toISOString(),
    updatedAt: binding.updatedAt.toISOString(),
  };
}

export type BindingView = ReturnType<typeof presentBinding>;
