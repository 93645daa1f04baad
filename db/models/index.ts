import { BaseModel } from './base-model';

export class Workspace extends BaseModel {
  static override tableName = 'workspaces';
  id!: string;
  name!: string;
  plan!: string;
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
  createdAt!: Date;
}
