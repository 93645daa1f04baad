import type { JsonSchema } from '../core/schema-validator';
import { createDataEndpointBody } from '../schemas/data-endpoints';
import { createDataEndpointOperation } from '../services/endpoints/operations';
import { isKeyless, Operation } from '../services/operations/operation';
import {
  createPipelineOperation,
  deletePipelineOperation,
  executePipelineOperation,
  getPipelineOperation,
  listPipelinesOperation,
  savePipelineDraftOperation,
  validatePipelineDraftOperation,
} from '../services/pipelines/operations';
import {
  cancelRunOperation,
  createPipelineScheduleOperation,
  deletePipelineScheduleOperation,
  getProjectRunOperation,
  listPipelineSchedulesOperation,
  updatePipelineScheduleOperation,
} from '../services/pipelines/run-operations';
import { getApiLimitsOperation } from '../services/tenancy/api-limit-operations';
import type { RequestInput } from '../services/operations/operation';

// MCP tools are transport, like routes: a name, an argument schema (JSON Schema, validated by the
// one validator), annotations, and the operation they invoke. Access is the operation's: a tool
// never states a scope. Project operations take projectId on a workspace connection; on a
// project-bound connection the project comes from the connection. Writes run in one transaction,
// and those that take an idempotencyKey run once per key (services/operations/invoke.ts).

export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
}

export interface ToolSpec<I = any, O = any> {
  name: string;
  description: string;
  operation: Operation<I, O>;
  /** The tool's own arguments (without projectId, idempotencyKey and confirm, which the flags below add). */
  arguments: JsonSchema;
  annotations: ToolAnnotations;
  /** required: the call must carry an idempotencyKey; optional: it may. */
  idempotencyKey?: 'required' | 'optional';
  /** Permanent deletions ask for confirm: true. */
  confirm?: boolean;
  /**
   * The operation's request parts from the arguments, as its HTTP route has them: ids onto params
   * (project_id the connection's or the call's projectId), options onto query, the payload onto body.
   */
  input(args: Record<string, any>, projectId: string | undefined): I;
}

/** A tool of a project operation takes projectId on a workspace connection. */
export const toolTakesProject = (tool: ToolSpec): boolean => !isKeyless(tool.operation.access) && Boolean(tool.operation.access.project);

/** The request parts of an operation outside any project (as its HTTP route has them). */
const request = <P, B>(params: P, body?: B): RequestInput<P, Record<string, never>, B | undefined> => ({ params, query: {}, body });
/** The request parts of a project operation: the project in the path beside the tool's ids. */
const inProject = <P, Q, B>(projectId: string | undefined, params: P, query: Q, body?: B): RequestInput<P & { project_id: string }, Q, B | undefined> =>
  ({ projectId, params: { project_id: projectId!, ...params }, query, body });
/** An operation's declared body schema, whose fields a tool takes as its own arguments. */
const bodyOf = (operation: Operation): Record<string, JsonSchema> => operation.input!.body!.properties as Record<string, JsonSchema>;

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
    operation: getApiLimitsOperation,
    input: () => request({}),
    description: 'The workspace’s request limits per 60-second window, shared by HTTP and MCP calls of the same key. Every MCP message counts as one request: a JSON-RPC batch of N messages is charged N requests of both buckets before any of it runs, and a batch that does not fit is refused whole (HTTP 429 with Retry-After; nothing in it runs).',
    arguments: object({}),
    annotations: READ_ONLY,
  },
  {
    name: 'pipeline_list',
    operation: listPipelinesOperation,
    input: (args, projectId) => inProject(projectId, {}, args),
    description: 'Pipelines of the project, with paging and exact name and tag filters.',
    // The operation's own query schema (paging, name, tag): the tool's arguments cannot drift from the route's.
    arguments: object(listPipelinesOperation.input!.query!.properties as Record<string, JsonSchema>),
    annotations: READ_ONLY,
  },
  {
    name: 'pipeline_get',
    operation: getPipelineOperation,
    input: ({ pipelineId }, projectId) => inProject(projectId, { pipeline_id: pipelineId }, {}),
    description: 'One pipeline with its active version and document.',
    arguments: object({ pipelineId: uuid }, ['pipelineId']),
    annotations: READ_ONLY,
  },
  {
    name: 'pipeline_create',
    operation: createPipelineOperation,
    input: (args, projectId) => inProject(projectId, {}, {}, args),
    description: 'Create a pipeline from a complete document: the pipeline, its first version (active) and your draft. Launches nothing.',
    arguments: createPipelineOperation.input!.body!,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'required',
  },
  {
    name: 'pipeline_draft_save',
    operation: savePipelineDraftOperation,
    input: ({ pipelineId, ...body }, projectId) => inProject(projectId, { pipeline_id: pipelineId }, {}, body),
    description: 'Replace your draft of the pipeline (it may be unfinished; the active version is unchanged). With basedOnVersionId, a base that a newer version has replaced is a conflict (stale_draft_base).',
    // The operation's body as a tool sends it: the HTTP one and basedOnVersionId.
    arguments: object({ pipelineId: uuid, ...bodyOf(savePipelineDraftOperation) }, ['pipelineId', 'document']),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'optional',
  },
  {
    name: 'pipeline_validate',
    operation: validatePipelineDraftOperation,
    input: ({ pipelineId }, projectId) => inProject(projectId, { pipeline_id: pipelineId }, {}),
    description: 'Check your draft of the pipeline: every problem with its node id.',
    arguments: object({ pipelineId: uuid }, ['pipelineId']),
    annotations: READ_ONLY,
  },
  {
    name: 'pipeline_delete',
    operation: deletePipelineOperation,
    input: ({ id }, projectId) => inProject(projectId, { pipeline_id: id }, {}),
    description: 'Permanently delete the pipeline: definition, versions, branches, drafts, positions and schedules. Its runs stay readable.',
    arguments: object({ id: { ...uuid, description: 'The pipeline to delete.' } }, ['id']),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    idempotencyKey: 'required',
    confirm: true,
  },
  {
    name: 'pipeline_execute',
    operation: executePipelineOperation,
    input: ({ pipelineId }, projectId) => inProject(projectId, { pipeline_id: pipelineId }, {}),
    description: 'Launch the pipeline’s active version. Returns the queued run; follow it with job_get.',
    arguments: object({ pipelineId: uuid }, ['pipelineId']),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'required',
  },
  {
    name: 'job_get',
    operation: getProjectRunOperation,
    input: ({ runId }, projectId) => inProject(projectId, { run_id: runId }, {}),
    description: 'A pipeline run’s status, per-node results and Temporal Web UI link.',
    arguments: object({ runId: uuid }, ['runId']),
    annotations: READ_ONLY,
  },
  {
    name: 'pipeline_run_cancel',
    operation: cancelRunOperation,
    input: ({ runId }, projectId) => inProject(projectId, { run_id: runId }, {}),
    description: 'Cancel a queued or running run: it ends canceled with nothing committed. A run that already ended is returned as it is.',
    arguments: object({ runId: uuid }, ['runId']),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    idempotencyKey: 'optional',
  },
  {
    name: 'pipeline_schedule_create',
    operation: createPipelineScheduleOperation,
    input: ({ pipelineId, ...body }, projectId) => inProject(projectId, { pipeline_id: pipelineId }, {}, body),
    description: 'Launch the pipeline on a Temporal Schedule (every intervalSeconds, or on a cron in UTC). Its runs show trigger "schedule".',
    arguments: object({ pipelineId: uuid, ...bodyOf(createPipelineScheduleOperation) }, ['pipelineId']),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    idempotencyKey: 'optional',
  },
  {
    name: 'pipeline_schedule_list',
    operation: listPipelineSchedulesOperation,
    input: ({ pipelineId }, projectId) => inProject(projectId, { pipeline_id: pipelineId }, {}),
    description: 'The pipeline’s schedules.',
    arguments: object({ pipelineId: uuid }, ['pipelineId']),
    annotations: READ_ONLY,
  },
  {
    name: 'pipeline_schedule_update',
    operation: updatePipelineScheduleOperation,
    input: ({ pipelineId, scheduleId, ...body }, projectId) => inProject(projectId, { pipeline_id: pipelineId, schedule_id: scheduleId }, {}, body),
    description: 'Pause (paused: true) or resume (paused: false) a schedule of the pipeline. A paused schedule launches nothing.',
    arguments: object({ pipelineId: uuid, scheduleId: uuid, ...bodyOf(updatePipelineScheduleOperation) }, ['pipelineId', 'scheduleId', 'paused']),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'optional',
  },
  {
    name: 'pipeline_schedule_delete',
    operation: deletePipelineScheduleOperation,
    input: ({ pipelineId, scheduleId }, projectId) => inProject(projectId, { pipeline_id: pipelineId, schedule_id: scheduleId }, {}),
    description: 'Delete a schedule of the pipeline. Runs it launched stay.',
    arguments: object({ pipelineId: uuid, scheduleId: uuid }, ['pipelineId', 'scheduleId']),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    idempotencyKey: 'required',
    confirm: true,
  },
  {
    name: 'source_create',
    operation: createDataEndpointOperation,
    input: (args) => request({}, args),
    description: 'Configure a data endpoint (role source unless given) on an installed capability. Runs no read or write and grants no permission.',
    arguments: sourceCreateArguments,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true },
    idempotencyKey: 'required',
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
  if (toolTakesProject(tool) && !bound) {
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
