import { DomainError, InputError } from '../../core/errors';
import { schemaProblems } from '../../core/schema-validator';
import { PipelineVersion } from '../../db/models';
import { findCapability } from '../../plugins';
import { isSource, PipelineDocument, pipelineDocumentSchema } from '../../pipelines/document';
import { FlowCounts, flowPage, FlowSink, planFlow } from '../../pipelines/flow';
import type { Row } from '../../pipelines/transforms';
import type { OperationContext } from '../operations/context';
import { capabilityContext, requireDataEndpoint } from '../endpoints/data-endpoints';
import { assertRunnableDocument, getDraft, guardPipelineData, requirePipeline } from './pipelines';

export const DEFAULT_SAMPLE_SIZE = 20;
export const MAX_SAMPLE_SIZE = 200;

interface NodePreview {
  nodeId: string;
  type: string;
  recordsIn: number;
  records: Row[];
  warnings: string[];
  error: { code: string; message: string } | null;
}

/**
 * Runs a draft (the caller's, by default) or a committed version on a sample of each source
 * through the whole graph and returns every node's output. Sources are read as a first page of a
 * full read (no position is used or moved); destinations show what they would receive. Nothing is
 * written anywhere.
 */
export async function previewPipeline(ctx: OperationContext, pipelineId: string, input: { versionId?: string; sampleSize?: number }) {
  const { db, principal, project } = ctx;
  const pipeline = await requirePipeline(db, project, pipelineId);
  let document: PipelineDocument;
  if (input.versionId) {
    const version = await PipelineVersion.query(db).findOne({ id: input.versionId, pipelineId: pipeline.id });
    if (!version) throw new InputError('unknown_version', 'versionId is not a version of this pipeline.', [{ path: '/versionId', message: 'is not a version of this pipeline' }]);
    document = version.document as unknown as PipelineDocument;
  } else {
    document = (await getDraft(ctx, pipelineId)).document as unknown as PipelineDocument;
    const shape = schemaProblems(pipelineDocumentSchema, structuredClone(document), { prefix: '/document' });
    if (shape.length) throw new InputError('pipeline_invalid', 'The draft is not a complete pipeline document yet: validate it to see every problem.', shape);
  }
  await assertRunnableDocument(db, principal.workspaceId, document);
  // A preview reads every source's records, as this key.
  await guardPipelineData(ctx.deps, db, principal, project.id, document);
  const sampleSize = input.sampleSize ?? DEFAULT_SAMPLE_SIZE;

  const previews = new Map<string, NodePreview>(document.nodes.map((node) => [node.id, { nodeId: node.id, type: node.type, recordsIn: 0, records: [], warnings: [], error: null }]));
  const seenKeys = new Map<string, Set<string>>();
  const sink: FlowSink = {
    async passDedupe(nodeId, records) {
      const seen = seenKeys.get(nodeId) ?? new Set<string>();
      seenKeys.set(nodeId, seen);
      return new Set(records.filter((r) => !seen.has(r.key) && seen.add(r.key)).map((r) => r.ordinal));
    },
    async deliver() {},
  };
  const keep = (nodeId: string, output: Row[]) => {
    const preview = previews.get(nodeId)!;
    preview.records.push(...output.slice(0, Math.max(0, sampleSize - preview.records.length)));
  };

  let recordsRead = 0;
  for (const source of document.nodes.filter(isSource)) {
    const preview = previews.get(source.id)!;
    try {
      const { endpoint, installation } = await requireDataEndpoint(ctx.deps, db, principal.workspaceId, source.endpointId);
      const runtime = findCapability(installation.capability, installation.capabilityVersion);
      const page = await runtime.readRecords(capabilityContext(db, installation, ctx.deps), endpoint.target, { where: [], orderBy: [], limit: sampleSize });
      recordsRead += page.records.length;
      keep(source.id, page.records);
      if (page.continuation) preview.warnings.push(`A sample: the first ${page.records.length} records of the source.`);
      const counts: FlowCounts = {};
      await flowPage(planFlow(document, source.id), page.records, sink, counts, keep);
      for (const [nodeId, count] of Object.entries(counts)) previews.get(nodeId)!.recordsIn += count.in;
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      // The node that failed says why; nodes after it show what reached them before.
      const failed = typeof error.details?.nodeId === 'string' && previews.has(error.details.nodeId) ? error.details.nodeId : source.id;
      previews.get(failed)!.error = { code: error.code, message: error.message };
    }
  }
  // The sources' records were read as a records read reads them, and are metered as one (SPEC 2.7).
  await ctx.deps.metering.chargeRecordsRead(db, { workspaceId: principal.workspaceId, projectId: project.id, actor: principal, records: recordsRead });
  return { versionId: input.versionId ?? null, draft: !input.versionId, sampleSize, nodes: [...previews.values()] };
}
