import type { JsonSchema } from '../core/schema-validator';
import type { Executor } from '../db/connection';
import type { Project } from '../db/models';
import type { AppDependencies } from '../api/route-spec';
import { createDataEndpointBody } from '../api/schemas/data-endpoints';
import { createPipelineBody, saveDraftBody } from '../api/schemas/pipelines';
import type { AccessRequirement, Principal } from '../services/tenancy/access';
import { getApiLimits } from '../services/tenancy/api-limits';
import { createDataEndpoint, DataEndpointInput } from '../services/endpoints/data-endpoints';
import { createPipelineSchedule, deletePipelineSchedule, listPipelineSchedules, ScheduleSpecInput } from '../services/pipelines/pipeline-schedules';
import { createPipeline, deletePipeline, getPipeline, listPipelines, PipelineInput, saveDraft, validateDraft } from '../services/pipelines/pipelines';
import { cancelRun, getRun, launchRun } from '../services/pipelines/runs';
import type { PipelineDocument } from '../pipelines/document';

// MCP tools, declared like routes: a name, an argument schema (JSON Schema, validated by the one
// validator), annotations, an access requirement, and a handler that calls the same service
// functions as the HTTP routes. Project tools take projectId on a workspace connection; on a
// project-bound connection the project comes from the connection. Tools that change something
// run in one transaction, and those that take an idempotencyKey run once per key (mcp/server.ts).

export interface ToolContext<A> {
  db: Executor;
  deps: AppDependencies;
  principal: Principal;
  /** Present for tools with `project: true`. */
  project: Project;
  args: A;
}

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
}

export interface ToolSpec<A = any> {
  name: string;
  description: string;
  auth: AccessRequirement;
  /** Takes a project: projectId in the arguments on a workspace connection. */
  project: boolean;
  /** The tool's own arguments (without projectId, idempotencyKey and confirm, which the flags below add). */
  arguments: JsonSchema;
  annotations: ToolAnnotations;
  /** required: the call must carry an idempotencyKey; optional: it may. */
  idempotencyKey?: 'required' | 'optional';
  /** Permanent deletions ask for confirm: true. */
  confirm?: boolean;
  handler(ctx: ToolContext<A>): Promise<unknown>;
}

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true };
const uuid: JsonSchema = { type: 'string', format: 'uuid' };

function object(properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema {
  return { type: 'object', additionalProperties: false, required, properties };
}

function withoutRequired(schema: JsonSchema, name: string): JsonSchema {
  return { ...schema, required: ((schema.required as string[]) ?? []).filter((field) => field !== name) };
}

const idempotencyKey: JsonSchema = {
  type: 'string',
  minLength: 8,
  maxLength: 200,
  pattern: '^[\\x21-\\x7e]+$',
  description: 'Your id for this operation (8 to 200 visible ASCII characters). Retrying with the same key and arguments returns the first result without acting again; the same key with other arguments is an error.',
};
const confirm: JsonSchema = { type: 'boolean', const: true, description: 'Must be true: the deletion is permanent.' };
const projectId: JsonSchema = { ...uuid, description: 'The project (on a workspace connection; a project-bound connection takes it from the connection).' };

const schedulePlan = {
  intervalSeconds: { type: 'integer', minimum: 60, maximum: 366 * 86400, description: 'Launch every N seconds (at least 60). Give this or cron.' },
  cron: { type: 'string', minLength: 9, maxLength: 200, description: 'Five-field cron expression in UTC (minute hour day-of-month month day-of-week). Give this or intervalSeconds.' },
  paused: { type: 'boolean', default: false, description: 'Create the schedule paused.' },
} satisfies Record<string, JsonSchema>;

const sourceCreateArguments: JsonSchema = withoutRequired({
  ...createDataEndpointBody,
  properties: {
    ...(createDataEndpointBody.properties as Record<string, JsonSchema>),
    role: { ...(createDataEndpointBody.properties as Record<string, JsonSchema>).role, default: 'source' },
  },
}, 'role');

export const tools: ToolSpec[] = [
  {
    name: 'organization_api_limits_get',
    description: 'The workspace’s request limits per 60-second window (shared by HTTP and MCP calls of the same key).',
    auth: { scopes: ['org:manage', 'org:read'] },
    project: false,
    arguments: object({}),
    annotations: READ_ONLY,
    handler: ({ db, principal }) => getApiLimits(db, principal.workspaceId),
  },
  {
    name: 'pipeline_list',
    description: 'Pipelines of the project, with paging and an exact name filter.',
    auth: { scopes: ['pipelines:read'] },
    project: true,
    arguments: object({ limit: { type: 'integer', minimum: 1, maximum: 200, default: 50 }, offset: { type: 'integer', minimum: 0, default: 0 }, name: { type: 'string', minLength: 1, maxLength: 200 } }),
    annotations: READ_ONLY,
    handler: ({ db, project, args }: ToolContext<{ limit: number; offset: number; name?: string }>) => listPipelines(db, project, { limit: args.limit, offset: args.offset }, { name: args.name }),
  },
  {
    name: 'pipeline_get',
    description: 'One pipeline with its active version and document.',
    auth: { scopes: ['pipelines:read'] },
    project: true,
    arguments: object({ pipelineId: uuid }, ['pipelineId']),
    annotations: READ_ONLY,
    handler: async ({ db, project, args }: ToolContext<{ pipelineId: string }>) => ({ pipeline: await getPipeline(db, project, args.pipelineId) }),
  },
  {
    name: 'pipeline_create',
    description: 'Create a pipeline from a complete document: the pipeline, its first version (active) and your draft. Launches nothing.',
    auth: { scopes: ['pipelines:write'], accountableActor: true },
    project: true,
    arguments: createPipelineBody,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'required',
    handler: ({ db, principal, project, args }: ToolContext<PipelineInput>) => createPipeline(db, principal, project, args),
  },
  {
    name: 'pipeline_draft_save',
    description: 'Replace your draft of the pipeline (it may be unfinished; the active version is unchanged). With basedOnVersionId, a base that a newer version has replaced is a conflict (stale_draft_base).',
    auth: { scopes: ['pipelines:write'], accountableActor: true },
    project: true,
    arguments: object({
      pipelineId: uuid,
      ...(saveDraftBody.properties as Record<string, JsonSchema>),
      basedOnVersionId: { ...uuid, description: 'The version your edits started from: the active version or a branch head.' },
    }, ['pipelineId', 'document']),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'optional',
    handler: async ({ db, principal, project, args }: ToolContext<{ pipelineId: string; document: PipelineDocument; workspaceState?: Record<string, unknown>; basedOnVersionId?: string }>) => ({
      draft: await saveDraft(db, principal, project, args.pipelineId, { document: args.document, workspaceState: args.workspaceState, basedOnVersionId: args.basedOnVersionId }),
    }),
  },
  {
    name: 'pipeline_validate',
    description: 'Check your draft of the pipeline: every problem with its node id.',
    auth: { scopes: ['pipelines:read'], accountableActor: true },
    project: true,
    arguments: object({ pipelineId: uuid }, ['pipelineId']),
    annotations: READ_ONLY,
    handler: ({ db, principal, project, args }: ToolContext<{ pipelineId: string }>) => validateDraft(db, principal, project, args.pipelineId),
  },
  {
    name: 'pipeline_delete',
    description: 'Permanently delete the pipeline: definition, versions, branches, drafts, positions and schedules. Its runs stay readable.',
    auth: { scopes: ['pipelines:write'], accountableActor: true },
    project: true,
    arguments: object({ id: { ...uuid, description: 'The pipeline to delete.' } }, ['id']),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    idempotencyKey: 'required',
    confirm: true,
    handler: async ({ db, deps, project, args }: ToolContext<{ id: string }>) => {
      await deletePipeline(db, deps.temporal, project, args.id);
      return { deleted: true, pipelineId: args.id };
    },
  },
  {
    name: 'pipeline_execute',
    description: 'Launch the pipeline’s active version. Returns the queued run; follow it with job_get.',
    auth: { scopes: ['pipelines:execute'], accountableActor: true },
    project: true,
    arguments: object({ pipelineId: uuid }, ['pipelineId']),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'required',
    handler: async ({ db, deps, principal, project, args }: ToolContext<{ pipelineId: string }>) => ({ run: await launchRun(db, deps.temporal, principal, project, args.pipelineId) }),
  },
  {
    name: 'job_get',
    description: 'A pipeline run’s status, per-node results and Temporal Web UI link.',
    auth: { scopes: ['runs:read'], accountableActor: true },
    project: true,
    arguments: object({ runId: uuid }, ['runId']),
    annotations: READ_ONLY,
    handler: async ({ db, principal, project, args }: ToolContext<{ runId: string }>) => ({ run: await getRun(db, principal, args.runId, project) }),
  },
  {
    name: 'pipeline_run_cancel',
    description: 'Cancel a queued or running run: it ends canceled with nothing committed. A run that already ended is returned as it is.',
    auth: { scopes: ['pipelines:execute', 'runs:read'], accountableActor: true },
    project: true,
    arguments: object({ runId: uuid }, ['runId']),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    idempotencyKey: 'optional',
    handler: async ({ db, deps, principal, project, args }: ToolContext<{ runId: string }>) => {
      await getRun(db, principal, args.runId, project); // the run must belong to the project
      return { run: await cancelRun(db, deps.temporal, principal, args.runId) };
    },
  },
  {
    name: 'pipeline_schedule_create',
    description: 'Launch the pipeline on a Temporal Schedule (every intervalSeconds, or on a cron in UTC). Its runs show trigger "schedule".',
    auth: { scopes: ['pipelines:execute'], accountableActor: true },
    project: true,
    arguments: object({ pipelineId: uuid, ...schedulePlan }, ['pipelineId']),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    idempotencyKey: 'optional',
    handler: async ({ db, deps, principal, project, args }: ToolContext<{ pipelineId: string } & ScheduleSpecInput>) => {
      const { pipelineId, ...plan } = args;
      return { schedule: await createPipelineSchedule(db, deps.temporal, principal, project, pipelineId, plan) };
    },
  },
  {
    name: 'pipeline_schedule_list',
    description: 'The pipeline’s schedules.',
    auth: { scopes: ['pipelines:read'] },
    project: true,
    arguments: object({ pipelineId: uuid }, ['pipelineId']),
    annotations: READ_ONLY,
    handler: async ({ db, project, args }: ToolContext<{ pipelineId: string }>) => ({ schedules: await listPipelineSchedules(db, project, args.pipelineId) }),
  },
  {
    name: 'pipeline_schedule_delete',
    description: 'Delete a schedule of the pipeline. Runs it launched stay.',
    auth: { scopes: ['pipelines:execute'], accountableActor: true },
    project: true,
    arguments: object({ pipelineId: uuid, scheduleId: uuid }, ['pipelineId', 'scheduleId']),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    idempotencyKey: 'required',
    confirm: true,
    handler: async ({ db, deps, project, args }: ToolContext<{ pipelineId: string; scheduleId: string }>) => {
      await deletePipelineSchedule(db, deps.temporal, project, args.pipelineId, args.scheduleId);
      return { deleted: true, scheduleId: args.scheduleId };
    },
  },
  {
    name: 'source_create',
    description: 'Configure a data endpoint (role source unless given) on an installed capability. Runs no read or write and grants no permission.',
    auth: { scopes: ['endpoints:write'], workspaceResources: true, accountableActor: true },
    project: false,
    arguments: sourceCreateArguments,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'required',
    handler: async ({ db, deps, principal, args }: ToolContext<DataEndpointInput>) => ({ dataEndpoint: await createDataEndpoint(db, principal, deps.encryptionKey, args) }),
  },
];

/**
 * A tool's argument schema as a client sees it on either connection kind: its own arguments plus
 * projectId (workspace connection, project tools), idempotencyKey and confirm. Built once per
 * tool so the validator compiles each schema once.
 */
function inputSchema(tool: ToolSpec, bound: boolean): JsonSchema {
  const own = tool.arguments as { properties?: Record<string, JsonSchema>; required?: string[] };
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  if (tool.project && !bound) {
    properties.projectId = projectId;
    required.push('projectId');
  }
  Object.assign(properties, own.properties);
  required.push(...(own.required ?? []));
  if (tool.idempotencyKey) {
    properties.idempotencyKey = idempotencyKey;
    if (tool.idempotencyKey === 'required') required.push('idempotencyKey');
  }
  if (tool.confirm) {
    properties.confirm = confirm;
    required.push('confirm');
  }
  return { ...tool.arguments, type: 'object', additionalProperties: false, properties, required };
}

const schemas = new Map(tools.map((tool) => [tool.name, { workspace: inputSchema(tool, false), bound: inputSchema(tool, true) }]));

export function toolInputSchema(tool: ToolSpec, bound: boolean): JsonSchema {
  const built = schemas.get(tool.name)!;
  return bound ? built.bound : built.workspace;
}
