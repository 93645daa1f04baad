import type { JsonSchema } from '../core/schema-validator';
import { MAX_NODES, pipelineDocumentSchema } from '../pipelines/document';
import { MAX_SAMPLE_SIZE } from '../services/pipelines/pipeline-preview';
import { RUN_STATUSES } from '../services/pipelines/runs';
import { idParams, listQuery, nullableTimestamp, timestamp, uuid } from './common';

const documentRef: JsonSchema = { $ref: '#/components/schemas/PipelineDocument' };
/** Request bodies embed the schema itself (the validator needs it); responses point at the published component. */
export const pipelineDocument = pipelineDocumentSchema;

const name: JsonSchema = { type: 'string', minLength: 1, maxLength: 200 };
const description: JsonSchema = { type: 'string', maxLength: 4000 };
const tags: JsonSchema = { type: 'array', maxItems: 50, uniqueItems: true, items: { type: 'string', minLength: 1, maxLength: 100 } };
const commitMessage: JsonSchema = { type: 'string', minLength: 1, maxLength: 2000 };
export const branchName: JsonSchema = {
  type: 'string',
  pattern: '^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$',
  description: 'Branch name: letters, digits, dots, underscores, slashes and hyphens (at most 100). The first branch is main.',
  errorMessage: { pattern: 'must start with a letter or digit and hold only letters, digits, dots, underscores, slashes and hyphens (at most 100)' },
};
const workspaceState: JsonSchema = { type: 'object', description: 'Editor state kept with the draft (layout, selection); Weft does not interpret it.' };

/** A draft may be unfinished: any nodes and edges; validate reports what is missing. */
const draftDocument: JsonSchema = {
  type: 'object',
  required: ['nodes', 'edges'],
  description: 'A pipeline document in progress. Checked against the full document schema by validate and at commit.',
  properties: {
    nodes: { type: 'array', maxItems: MAX_NODES, items: { type: 'object' } },
    edges: { type: 'array', maxItems: MAX_NODES * 5, items: { type: 'object' } },
  },
};

export const createPipelineBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['document'],
  properties: {
    name: { ...name, description: 'Unique in the project. Optional (SPEC 4.3 sends document, workspaceState and commitMessage): without it the pipeline is named "Untitled pipeline", numbered when that is taken.' },
    description,
    tags,
    document: pipelineDocument,
    workspaceState,
    commitMessage,
  },
};

export const saveDraftBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['document'],
  properties: { document: draftDocument, workspaceState },
};

export const commitVersionBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['document'],
  properties: { document: pipelineDocument, branchName, commitMessage },
};

export const activateBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Optional: the version id again, as a guard. A different id than the path\'s is a 409.',
  properties: { versionId: uuid },
};

export const createBranchBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: { name: branchName, sourceVersionId: { ...uuid, description: 'The version the branch starts at; default the active version.' } },
};

/** A schedule's plan (createPipelineSchedule): the MCP tool's arguments beside pipelineId, and the console's body. */
export const schedulePlanProperties = {
  intervalSeconds: { type: 'integer', minimum: 60, maximum: 366 * 86400, description: 'Launch every N seconds (at least 60). Give this or cron.' },
  cron: { type: 'string', minLength: 9, maxLength: 200, description: 'Five-field cron expression in UTC (minute hour day-of-month month day-of-week). Give this or intervalSeconds.' },
  paused: { type: 'boolean', default: false, description: 'Create the schedule paused.' },
} satisfies Record<string, JsonSchema>;

export const schedulePlanBody: JsonSchema = { type: 'object', additionalProperties: false, properties: schedulePlanProperties };

/** Pausing or resuming a schedule (updatePipelineSchedule). */
export const scheduleStateProperties = {
  paused: { type: 'boolean', description: 'true pauses the schedule (it launches nothing), false resumes it.' },
} satisfies Record<string, JsonSchema>;

export const scheduleStateBody: JsonSchema = { type: 'object', additionalProperties: false, required: ['paused'], properties: scheduleStateProperties };

/** A pipeline's schedule, as the pipeline_schedule_* tools and the console answer it. */
export const pipelineScheduleSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'pipelineId', 'projectId', 'spec', 'temporalScheduleId', 'createdByMemberId', 'actor', 'createdAt'],
  properties: {
    id: uuid,
    pipelineId: uuid,
    projectId: uuid,
    spec: { type: 'object', description: 'The plan it was made with.', properties: schedulePlanProperties },
    temporalScheduleId: { type: 'string' },
    createdByMemberId: uuid,
    actor: {
      type: 'object',
      description: 'What its runs act as: the key that made it (kind key), or its member (kind member, apiKeyId null) for a schedule made in the console.',
      properties: { kind: { type: 'string', enum: ['key', 'member'] }, memberId: uuid, apiKeyId: { type: ['string', 'null'] } },
    },
    createdAt: timestamp,
  },
};

export const updatePipelineBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { name, description, tags },
  errorMessage: { additionalProperties: 'PATCH changes name, description and tags; send the document with PUT or commit a version.' },
};

export const previewBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    versionId: { ...uuid, description: 'Preview this committed version instead of your draft.' },
    sampleSize: { type: 'integer', minimum: 1, maximum: MAX_SAMPLE_SIZE, default: 20, description: 'Records read from each source.' },
  },
};

export const launchBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['pipelineId'],
  properties: { pipelineId: uuid },
};

const versionSummary: JsonSchema = {
  type: ['object', 'null'],
  properties: { id: uuid, number: { type: 'integer' }, branchName: { type: 'string' }, commitMessage: { type: ['string', 'null'] }, createdAt: timestamp },
};

export const pipelineSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'projectId', 'name', 'description', 'tags', 'activeVersionId', 'activeVersion', 'document', 'createdAt', 'updatedAt'],
  properties: {
    id: uuid,
    projectId: uuid,
    name: { type: 'string' },
    description: { type: 'string' },
    tags: { type: 'array', items: { type: 'string' } },
    activeVersionId: { type: ['string', 'null'], format: 'uuid' },
    activeVersion: versionSummary,
    document: { description: 'The active version\'s document.', anyOf: [documentRef, { type: 'null' }] },
    createdByMemberId: uuid,
    createdAt: timestamp,
    updatedAt: timestamp,
  },
};

export const versionSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'pipelineId', 'number', 'branchName', 'document', 'createdAt'],
  properties: {
    id: uuid,
    pipelineId: uuid,
    number: { type: 'integer', description: 'Sequential per pipeline, across branches.' },
    branchName: { type: 'string' },
    parentVersionId: { type: ['string', 'null'], format: 'uuid', description: 'The branch head this version was committed on.' },
    commitMessage: { type: ['string', 'null'] },
    document: documentRef,
    createdByMemberId: uuid,
    createdAt: timestamp,
  },
};

export const draftSchema: JsonSchema = {
  type: 'object',
  required: ['pipelineId', 'memberId', 'document', 'saved'],
  properties: {
    pipelineId: uuid,
    memberId: uuid,
    document: draftDocument,
    workspaceState: { type: ['object', 'null'] },
    basedOnVersionId: { type: ['string', 'null'], format: 'uuid' },
    saved: { type: 'boolean', description: 'false: you have not saved a draft yet, and this one starts from the active version.' },
    updatedAt: nullableTimestamp,
  },
};

export const branchSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'headVersionId'],
  properties: { name: { type: 'string' }, headVersionId: uuid, createdByMemberId: uuid, createdAt: timestamp, updatedAt: timestamp },
};

export const problemListSchema: JsonSchema = {
  type: 'object',
  required: ['valid', 'problems'],
  properties: {
    valid: { type: 'boolean' },
    problems: {
      type: 'array',
      items: { type: 'object', required: ['path', 'message'], properties: { path: { type: 'string' }, message: { type: 'string' }, nodeId: { type: 'string' } } },
    },
  },
};

export const previewSchema: JsonSchema = {
  type: 'object',
  required: ['preview'],
  properties: {
    preview: {
      type: 'object',
      required: ['nodes', 'sampleSize'],
      properties: {
        versionId: { type: ['string', 'null'] },
        draft: { type: 'boolean' },
        sampleSize: { type: 'integer' },
        nodes: {
          type: 'array',
          items: {
            type: 'object',
            required: ['nodeId', 'type', 'records', 'warnings', 'error'],
            properties: {
              nodeId: { type: 'string' },
              type: { type: 'string' },
              recordsIn: { type: 'integer' },
              records: { type: 'array', items: { type: 'object' }, description: 'The node\'s output (at most sampleSize records).' },
              warnings: { type: 'array', items: { type: 'string' } },
              error: { type: ['object', 'null'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
            },
          },
        },
      },
    },
  },
};

const count: JsonSchema = { type: ['integer', 'null'] };

export const runSummarySchema: JsonSchema = {
  type: 'object',
  required: ['id', 'projectId', 'pipelineId', 'versionId', 'versionNumber', 'trigger', 'actor', 'status', 'queuedAt', 'workflow'],
  properties: {
    id: uuid,
    projectId: uuid,
    pipelineId: uuid,
    pipelineName: { type: 'string' },
    versionId: uuid,
    versionNumber: { type: 'integer' },
    trigger: { type: 'string', enum: ['api', 'schedule'] },
    scheduleId: { type: ['string', 'null'] },
    actor: {
      type: 'object',
      description: 'Who launched the run, and what it acts as when it reads and commits: its API key (kind key), or its member (kind member, apiKeyId null) for a run launched in the console. A schedule\'s run acts as the schedule\'s key.',
      properties: { kind: { type: 'string', enum: ['key', 'member'] }, memberId: uuid, apiKeyId: { type: ['string', 'null'] } },
    },
    status: { type: 'string', enum: RUN_STATUSES, description: 'queued (waiting for its turn: one run of a pipeline at a time), running, succeeded, failed or canceled.' },
    syncTime: { ...nullableTimestamp, description: 'Windows of this run end here.' },
    queuedAt: timestamp,
    startedAt: nullableTimestamp,
    finishedAt: nullableTimestamp,
    durationMs: count,
    warnings: { type: 'array', items: { type: 'object', properties: { nodeId: { type: 'string' }, code: { type: 'string' }, message: { type: 'string' } } } },
    error: {
      type: ['object', 'null'],
      description: 'Evidence of a failure: the node, a stable code, the message and the remote system\'s HTTP status when it answered.',
      properties: { nodeId: { type: ['string', 'null'] }, code: { type: 'string' }, message: { type: 'string' }, remoteStatus: count },
    },
    workflow: {
      type: 'object',
      properties: { workflowId: { type: 'string' }, namespace: { type: 'string' }, webUiUrl: { type: ['string', 'null'], description: 'The run in the Temporal Web UI, when Weft knows its address.' } },
    },
  },
};

export const runSchema: JsonSchema = {
  ...runSummarySchema,
  required: [...(runSummarySchema.required as string[]), 'nodes', 'document'],
  properties: {
    ...(runSummarySchema.properties as Record<string, JsonSchema>),
    document: { ...documentRef, description: 'The version\'s document as it was launched.' },
    nodes: {
      type: 'array',
      description: 'Per-node results, live while the run is running.',
      items: {
        type: 'object',
        properties: {
          nodeId: { type: 'string' },
          type: { type: 'string' },
          status: { type: 'string', enum: ['pending', 'running', 'succeeded', 'failed', 'canceled'] },
          recordsRead: count,
          recordsIn: count,
          recordsOut: count,
          recordsWritten: count,
          pages: count,
          stopReason: { type: ['string', 'null'], description: 'Why a source read stopped: exhausted, empty_page, max_pages (truncated), repeated_cursor.' },
          window: { type: ['object', 'null'], description: 'The time window a source asked for: {start, end}.' },
          snapshot: { type: ['object', 'null'], description: 'The snapshot a destination\'s commit created.' },
          warnings: { type: 'array' },
          startedAt: nullableTimestamp,
          finishedAt: nullableTimestamp,
        },
      },
    },
  },
};

export const runStatusFilter: JsonSchema = { type: 'string', enum: RUN_STATUSES };

/** The runs of one project, by status and pipeline. */
export const projectRunsQuery = listQuery({ status: runStatusFilter, pipelineId: uuid });
/** The runs of every project the key may use: the project is a filter too. */
export const runsQuery = listQuery({ status: runStatusFilter, pipelineId: uuid, projectId: uuid });
export const listPipelinesQuery = listQuery({ name: { type: 'string', minLength: 1, maxLength: 200 }, tag: { type: 'string', minLength: 1, maxLength: 100 } });
export const listVersionsQuery = listQuery({ versionId: uuid, branchName });
export const pipelineParams = idParams('project_id', 'pipeline_id');
