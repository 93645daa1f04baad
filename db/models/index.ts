import { BaseModel } from './base-model';

export class Workspace extends BaseModel {
  static override tableName = 'workspaces';
  id!: string;
  name!: string;
  plan!: string;
  semanticConsumerMode!: 'off' | 'read' | 'write';
  stripeCustomerId!: string | null;
  stripeSubscriptionId!: string | null;
  createdAt!: Date;
}

export class Member extends BaseModel {
  static override tableName = 'members';
  id!: string;
  workspaceId!: string;
  name!: string;
  role!: 'owner' | 'admin' | 'member';
  createdAt!: Date;
  removedAt!: Date | null;
}

export class Project extends BaseModel {
  static override tableName = 'projects';
  id!: string;
  workspaceId!: string;
  name!: string;
  description!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export class ApiKey extends BaseModel {
  static override tableName = 'api_keys';
  id!: string;
  workspaceId!: string;
  createdByMemberId!: string;
  name!: string;
  prefix!: string;
  secretHash!: string;
  scopes!: string[];
  readPermissions!: string[];
  writePermissions!: string[];
  projectIds!: string[];
  workspaceResources!: boolean;
  expiresAt!: Date | null;
  revokedAt!: Date | null;
  lastUsedAt!: Date | null;
  createdAt!: Date;
}

export class PluginInstallation extends BaseModel {
  static override tableName = 'plugin_installations';
  id!: string;
  workspaceId!: string;
  capability!: string;
  capabilityVersion!: string;
  settings!: Record<string, unknown>;
  encryptedCredentials!: string | null;
  createdAt!: Date;
}

export class ApiLimitSettings extends BaseModel {
  static override tableName = 'api_limit_settings';
  static override idColumn = 'workspaceId';
  workspaceId!: string;
  workspaceRequests!: number;
  apiKeyRequests!: number;
  updatedAt!: Date;
}

export interface SchemaHints {
  primaryKey?: string[];
  columns?: Array<{ name: string; type?: string; nullable?: boolean; description?: string }>;
}

export class DataEndpoint extends BaseModel {
  static override tableName = 'data_endpoints';
  static override jsonAttributes = ['target', 'schemaHints'];
  id!: string;
  workspaceId!: string;
  pluginInstallationId!: string;
  name!: string;
  namespace!: string;
  role!: string;
  contractKind!: string;
  target!: Record<string, unknown>;
  schemaHints!: SchemaHints | null;
  freshness!: string | null;
  ownerTeam!: string | null;
  trustRank!: string | null;
  description!: string | null;
  accepts!: string[];
  emits!: string[];
  createdByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
  installation?: PluginInstallation;

  // The composite key keeps the join inside the endpoint's own workspace.
  static override get relationMappings() {
    return {
      installation: {
        relation: BaseModel.BelongsToOneRelation,
        modelClass: PluginInstallation,
        join: {
          from: ['data_endpoints.workspaceId', 'data_endpoints.pluginInstallationId'],
          to: ['plugin_installations.workspaceId', 'plugin_installations.id'],
        },
      },
    };
  }
}

export class Pipeline extends BaseModel {
  static override tableName = 'pipelines';
  id!: string;
  workspaceId!: string;
  projectId!: string;
  name!: string;
  description!: string;
  tags!: string[];
  activeVersionId!: string | null;
  createdByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export class PipelineVersion extends BaseModel {
  static override tableName = 'pipeline_versions';
  static override jsonAttributes = ['document'];
  id!: string;
  pipelineId!: string;
  workspaceId!: string;
  number!: number;
  branchName!: string;
  parentVersionId!: string | null;
  document!: Record<string, unknown>;
  endpointIds!: string[];
  commitMessage!: string | null;
  createdByMemberId!: string;
  createdAt!: Date;
}

export class PipelineBranch extends BaseModel {
  static override tableName = 'pipeline_branches';
  static override idColumn = ['pipelineId', 'name'];
  pipelineId!: string;
  name!: string;
  headVersionId!: string;
  createdByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export class PipelineDraft extends BaseModel {
  static override tableName = 'pipeline_drafts';
  static override idColumn = ['pipelineId', 'memberId'];
  static override jsonAttributes = ['document', 'workspaceState'];
  pipelineId!: string;
  memberId!: string;
  workspaceId!: string;
  document!: Record<string, unknown>;
  workspaceState!: Record<string, unknown> | null;
  basedOnVersionId!: string | null;
  endpointIds!: string[];
  updatedAt!: Date;
}

export type RunStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

export class PipelineRun extends BaseModel {
  static override tableName = 'pipeline_runs';
  static override jsonAttributes = ['document', 'warnings', 'error'];
  id!: string;
  workspaceId!: string;
  projectId!: string;
  pipelineId!: string;
  pipelineName!: string;
  versionId!: string;
  versionNumber!: number;
  document!: Record<string, unknown>;
  trigger!: 'api' | 'schedule';
  scheduleId!: string | null;
  actorMemberId!: string;
  apiKeyId!: string | null;
  status!: RunStatus;
  workflowId!: string;
  syncTime!: Date | null;
  queuedAt!: Date;
  startedAt!: Date | null;
  finishedAt!: Date | null;
  warnings!: RunWarning[];
  error!: RunErrorEvidence | null;
}

export interface RunWarning {
  nodeId: string;
  code: string;
  message: string;
}

/** What a failed run says about its failure: the node, the message, and the remote status when a remote system answered. */
export interface RunErrorEvidence {
  nodeId: string | null;
  code: string;
  message: string;
  remoteStatus: number | null;
}

export class PipelineSchedule extends BaseModel {
  static override tableName = 'pipeline_schedules';
  static override jsonAttributes = ['spec'];
  id!: string;
  workspaceId!: string;
  projectId!: string;
  pipelineId!: string;
  spec!: Record<string, unknown>;
  temporalScheduleId!: string;
  createdByMemberId!: string;
  /** The key whose launches these are; null for schedules made before keys were recorded. */
  createdByApiKeyId!: string | null;
  createdAt!: Date;
}

export interface SnapshotRef {
  id: string;
  version: string;
}

export class WritePolicy extends BaseModel {
  static override tableName = 'write_policies';
  id!: string;
  workspaceId!: string;
  dataEndpointId!: string;
  allowedOperations!: Array<'append' | 'upsert' | 'update' | 'delete'>;
  projectIds!: string[];
  approvalRequired!: boolean;
  approvalsRequired!: number;
  approvalTimeoutSeconds!: number;
  requiredReadPermissions!: string[];
  requiredWritePermissions!: string[];
  revision!: number;
  createdByMemberId!: string;
  updatedByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export type WriteActionStatus = 'pending_approval' | 'applied' | 'rejected' | 'expired' | 'failed';

/** A business error as an action keeps it, so a replay answers with the same error. */
export interface StoredError {
  kind: string;
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export class WriteAction extends BaseModel {
  static override tableName = 'write_actions';
  static override jsonAttributes = ['input', 'snapshotBefore', 'snapshotAfter', 'error', 'changePreview'];
  id!: string;
  workspaceId!: string;
  dataEndpointId!: string;
  projectId!: string;
  actionId!: string;
  idempotencyKey!: string;
  requestDigest!: string;
  operation!: 'append' | 'upsert' | 'update' | 'delete';
  input!: Record<string, unknown>;
  status!: WriteActionStatus;
  approvalsRequired!: number;
  expiresAt!: Date | null;
  proposedByMemberId!: string;
  proposedByApiKeyId!: string;
  snapshotBefore!: SnapshotRef;
  changePreview!: Record<string, unknown> | null;
  snapshotAfter!: SnapshotRef | null;
  affected!: number | null;
  error!: StoredError | null;
  workflowId!: string | null;
  createdAt!: Date;
  updatedAt!: Date;
  endedAt!: Date | null;
}

export class WriteActionDecision extends BaseModel {
  static override tableName = 'write_action_decisions';
  static override idColumn = ['writeActionId', 'memberId'];
  writeActionId!: string;
  memberId!: string;
  apiKeyId!: string;
  decision!: 'approve' | 'reject';
  comment!: string | null;
  createdAt!: Date;
}

export type WriteActionEventKind = 'proposed' | 'approved' | 'rejected' | 'expired' | 'applied' | 'failed';

export class WriteActionEvent extends BaseModel {
  static override tableName = 'write_action_events';
  static override jsonAttributes = ['snapshotBefore', 'snapshotAfter', 'detail'];
  id!: string;
  workspaceId!: string;
  dataEndpointId!: string;
  writeActionId!: string;
  actionId!: string;
  kind!: WriteActionEventKind;
  actorMemberId!: string | null;
  actorApiKeyId!: string | null;
  idempotencyKey!: string;
  snapshotBefore!: SnapshotRef | null;
  snapshotAfter!: SnapshotRef | null;
  detail!: Record<string, unknown> | null;
  createdAt!: Date;
}

export class Ontology extends BaseModel {
  static override tableName = 'ontologies';
  id!: string;
  workspaceId!: string;
  projectId!: string;
  baseIri!: string;
  activePackageId!: string | null;
  createdAt!: Date;
  updatedAt!: Date;
}

export class OntologyVersion extends BaseModel {
  static override tableName = 'ontology_versions';
  static override jsonAttributes = ['definition'];
  id!: string;
  ontologyId!: string;
  number!: number;
  branchName!: string;
  parentVersionId!: string | null;
  definition!: import('../../ontology/definition').OntologyDefinition;
  message!: string;
  createdByMemberId!: string;
  createdAt!: Date;
}

export class OntologyBranch extends BaseModel {
  static override tableName = 'ontology_branches';
  static override idColumn = ['ontologyId', 'name'];
  ontologyId!: string;
  name!: string;
  headVersionId!: string;
  createdByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export interface PackageTerms {
  classes: string[];
  /** Datatype properties by class, with their datatype. */
  properties: Record<string, { domain: string; datatype: string }>;
  links: Record<string, { from: string; to: string }>;
}

export class OntologyPackage extends BaseModel {
  static override tableName = 'ontology_packages';
  static override jsonAttributes = ['counts', 'terms'];
  id!: string;
  ontologyId!: string;
  workspaceId!: string;
  versionId!: string;
  contentHash!: string;
  baseIri!: string;
  nquads!: string;
  turtle!: string;
  tripleCount!: number;
  counts!: Record<string, number>;
  terms!: PackageTerms;
  compiledByMemberId!: string;
  compiledAt!: Date;
}

export class OntologyDocument extends BaseModel {
  static override tableName = 'ontology_documents';
  id!: string;
  ontologyId!: string;
  mediaType!: string;
  byteSize!: number;
  contentHash!: string;
  nquads!: string;
  tripleCount!: number;
  createdByMemberId!: string;
  createdAt!: Date;
}

export interface BindingMapping {
  /** IRI template for subjects, e.g. https://example.com/customers/{id}; placeholders are endpoint fields. */
  subjectTemplate: string;
  /** Term property (or link) local name -> endpoint field. Links map a field to the target's IRI template. */
  properties: Record<string, string>;
  links?: Record<string, { field: string; targetTemplate: string }>;
}

export class ReadBinding extends BaseModel {
  static override tableName = 'read_bindings';
  static override jsonAttributes = ['mapping'];
  id!: string;
  workspaceId!: string;
  projectId!: string;
  ontologyPackageId!: string;
  termId!: string;
  dataEndpointId!: string;
  mapping!: BindingMapping;
  requiredReadPermissions!: string[];
  status!: 'active' | 'incompatible';
  createdByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export interface QueryDefinition {
  description?: string;
  /** A SPARQL SELECT over the ontology; $name variables are input parameters, bound as typed terms. */
  sparql: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
}

export class PublishedQuery extends BaseModel {
  static override tableName = 'published_queries';
  id!: string;
  workspaceId!: string;
  projectId!: string;
  name!: string;
  currentVersionId!: string | null;
  createdByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
}

export class QueryVersion extends BaseModel {
  static override tableName = 'query_versions';
  static override jsonAttributes = ['definition'];
  id!: string;
  queryId!: string;
  number!: number;
  definition!: QueryDefinition;
  requiredReadPermissions!: string[];
  createdByMemberId!: string;
  createdAt!: Date;
}

export interface BreakingChange {
  kind: 'output_field_removed' | 'output_type_changed' | 'input_field_required' | 'type_narrowed';
  path: string;
  message: string;
}

export class QueryRelease extends BaseModel {
  static override tableName = 'query_releases';
  static override idColumn = ['queryId', 'version'];
  static override jsonAttributes = ['breakingChanges'];
  queryId!: string;
  version!: number;
  queryVersionId!: string;
  status!: 'published' | 'retired';
  breakingChanges!: BreakingChange[];
  publishedByMemberId!: string;
  workflowId!: string | null;
  publishedAt!: Date;
  retiredAt!: Date | null;
}

export type QueryJobStatus = 'active' | 'completed' | 'failed' | 'canceled' | 'expired';

export class QueryJob extends BaseModel {
  static override tableName = 'query_jobs';
  static override jsonAttributes = ['input', 'rows', 'error'];
  id!: string;
  workspaceId!: string;
  projectId!: string;
  queryId!: string;
  releaseVersion!: number;
  apiKeyId!: string;
  memberId!: string;
  status!: QueryJobStatus;
  input!: Record<string, unknown>;
  inputHash!: string;
  rows!: Array<Record<string, unknown>> | null;
  rowCount!: number | null;
  error!: StoredError | null;
  workflowId!: string;
  createdAt!: Date;
  finishedAt!: Date | null;
  expiresAt!: Date;
}

export class QueryExecution extends BaseModel {
  static override tableName = 'query_executions';
  id!: string;
  workspaceId!: string;
  projectId!: string;
  queryId!: string;
  releaseVersion!: number;
  apiKeyId!: string;
  memberId!: string;
  inputHash!: string;
  mode!: 'sync' | 'async';
  status!: string;
  durationMs!: number | null;
  rowCount!: number | null;
  jobId!: string | null;
  createdAt!: Date;
}

export type MeteredKind = 'records_read' | 'pipeline_run' | 'query_execution' | 'sparql_query' | 'governed_write';

export class MeteredOperation extends BaseModel {
  static override tableName = 'metered_operations';
  static override jsonAttributes = ['quantities'];
  id!: string;
  workspaceId!: string;
  projectId!: string | null;
  kind!: MeteredKind;
  operationRef!: string;
  parentOperationId!: string | null;
  actorMemberId!: string | null;
  apiKeyId!: string | null;
  quantities!: Record<string, number>;
  /** numeric: pg returns it as a string, kept exact. */
  amount!: string;
  reportedAt!: Date | null;
  createdAt!: Date;
}

export class OperationCharge extends BaseModel {
  static override tableName = 'operation_charges';
  id!: string;
  operationId!: string;
  item!: string;
  quantity!: string;
  unitPrice!: string;
  amount!: string;
}

export class UsageAlertSettings extends BaseModel {
  static override tableName = 'usage_alert_settings';
  static override idColumn = 'workspaceId';
  workspaceId!: string;
  monthlyBudget!: string | null;
  thresholds!: number[];
  updatedAt!: Date;
}

export class UsageAlertEvent extends BaseModel {
  static override tableName = 'usage_alert_events';
  id!: string;
  workspaceId!: string;
  period!: string;
  threshold!: number;
  amount!: string;
  createdAt!: Date;
}

export class Invoice extends BaseModel {
  static override tableName = 'invoices';
  id!: string;
  workspaceId!: string;
  status!: string;
  amountDue!: string;
  amountPaid!: string;
  currency!: string;
  hostedInvoiceUrl!: string | null;
  periodStart!: Date | null;
  periodEnd!: Date | null;
  updatedAt!: Date;
}
