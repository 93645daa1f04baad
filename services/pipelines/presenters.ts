import { temporalSettings, temporalWebUiUrl } from '../../core/temporal-config';
import type { Pipeline, PipelineBranch, PipelineDraft, PipelineRun, PipelineSchedule, PipelineVersion } from '../../db/models';
import type { PipelineDocument } from '../../pipelines/document';

// The views the pipeline and run operations answer with. A presenter shapes rows and what its
// service read for them, and queries nothing.

export const presentVersion = (v: PipelineVersion) => ({
  id: v.id,
  pipelineId: v.pipelineId,
  number: v.number,
  branchName: v.branchName,
  parentVersionId: v.parentVersionId,
  commitMessage: v.commitMessage,
  document: v.document,
  createdByMemberId: v.createdByMemberId,
  createdAt: v.createdAt.toISOString(),
});

export type PipelineVersionView = ReturnType<typeof presentVersion>;

export function presentPipeline(p: Pipeline, active: PipelineVersion | undefined) {
  return {
    id: p.id,
    projectId: p.projectId,
    name: p.name,
    description: p.description,
    tags: p.tags,
    activeVersionId: p.activeVersionId,
    activeVersion: active ? { id: active.id, number: active.number, branchName: active.branchName, commitMessage: active.commitMessage, createdAt: active.createdAt.toISOString() } : null,
    document: active?.document ?? null,
    createdByMemberId: p.createdByMemberId,
    createdAt: p.createdAt.toISOString(),
    updatedAt: p.updatedAt.toISOString(),
  };
}

export type PipelineView = ReturnType<typeof presentPipeline>;

export function presentDraft(d: PipelineDraft, saved = true) {
  return {
    pipelineId: d.pipelineId,
    memberId: d.memberId,
    document: d.document,
    workspaceState: d.workspaceState,
    basedOnVersionId: d.basedOnVersionId,
    saved,
    updatedAt: saved ? d.updatedAt.toISOString() : null,
  };
}

export const presentBranch = (b: PipelineBranch) => ({ name: b.name, headVersionId: b.headVersionId, createdByMemberId: b.createdByMemberId, createdAt: b.createdAt.toISOString(), updatedAt: b.updatedAt.toISOString() });

export const presentSchedule = (s: PipelineSchedule) => ({
  id: s.id,
  pipelineId: s.pipelineId,
  projectId: s.projectId,
  spec: s.spec,
  temporalScheduleId: s.temporalScheduleId,
  createdByMemberId: s.createdByMemberId,
  actor: { kind: s.actorKind, memberId: s.createdByMemberId, apiKeyId: s.createdByApiKeyId },
  createdAt: s.createdAt.toISOString(),
});

/** A row of pipelineRunNodes, as the service reads it. */
export interface NodeRow {
  nodeId: string;
  nodeType: string;
  status: string;
  recordsIn: number;
  recordsOut: number;
  pages: number;
  stopReason: string | null;
  window: Record<string, unknown> | null;
  warnings: unknown[];
  flow: Record<string, { in: number; out: number }>;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/**
 * Per-node results. Sources report what they read; other nodes sum what every source's read
 * delivered to them (a node fed by two sources counts both); destinations report what their
 * commit wrote. While the run is running these numbers grow page by page.
 */
function presentNodes(document: PipelineDocument, rows: NodeRow[]) {
  const byId = new Map(rows.map((row) => [row.nodeId, row]));
  const delivered = new Map<string, { in: number; out: number }>();
  for (const row of rows) {
    for (const [nodeId, counts] of Object.entries(row.flow ?? {})) {
      const sum = delivered.get(nodeId) ?? { in: 0, out: 0 };
      delivered.set(nodeId, { in: sum.in + counts.in, out: sum.out + counts.out });
    }
  }
  return document.nodes.map((node) => {
    const row = byId.get(node.id);
    const flow = delivered.get(node.id) ?? { in: 0, out: 0 };
    const source = node.type === 'source';
    const destination = node.type === 'destination';
    return {
      nodeId: node.id,
      type: node.type,
      status: row?.status ?? 'pending',
      recordsRead: source ? (row?.recordsIn ?? 0) : null,
      recordsIn: source ? null : flow.in,
      recordsOut: source ? (row?.recordsIn ?? 0) : destination ? null : flow.out,
      recordsWritten: destination && row?.status === 'succeeded' ? row.recordsOut : destination ? 0 : null,
      pages: source ? (row?.pages ?? 0) : null,
      stopReason: row?.stopReason ?? null,
      window: source ? (row?.window ?? null) : null,
      snapshot: destination ? ((row?.window as { snapshot?: unknown } | null)?.snapshot ?? null) : null,
      warnings: row?.warnings ?? [],
      startedAt: row?.startedAt?.toISOString() ?? null,
      finishedAt: row?.finishedAt?.toISOString() ?? null,
    };
  });
}

export function presentRunSummary(run: PipelineRun) {
  const { namespace } = temporalSettings();
  const webUi = temporalWebUiUrl();
  return {
    id: run.id,
    projectId: run.projectId,
    pipelineId: run.pipelineId,
    pipelineName: run.pipelineName,
    versionId: run.versionId,
    versionNumber: run.versionNumber,
    trigger: run.trigger,
    scheduleId: run.scheduleId,
    actor: { kind: run.actorKind, memberId: run.actorMemberId, apiKeyId: run.apiKeyId },
    status: run.status,
    syncTime: run.syncTime?.toISOString() ?? null,
    queuedAt: run.queuedAt.toISOString(),
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
    durationMs: run.startedAt && run.finishedAt ? run.finishedAt.getTime() - run.startedAt.getTime() : null,
    warnings: run.warnings,
    error: run.error,
    workflow: {
      workflowId: run.workflowId,
      namespace,
      webUiUrl: webUi ? `${webUi}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(run.workflowId)}` : null,
    },
  };
}

export function presentRunWithNodes(run: PipelineRun, rows: NodeRow[]) {
  return { ...presentRunSummary(run), document: run.document, nodes: presentNodes(run.document as unknown as PipelineDocument, rows) };
}

export type RunView = ReturnType<typeof presentRunWithNodes>;
