import { BaseModel } from './base-model';

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
  /** What the run acts as: its key (apiKeyId), or its member (actorMemberId) for a run launched in the console. */
  actorKind!: 'key' | 'member';
  status!: RunStatus;
  workflowId!: string;
  syncTime!: Date | null;
  queuedAt!: Date;
  startedAt!: Date | null;
  /** When the run's workflow was found started (by its launch or the sweep); null until then. */
  workflowStartedAt!: Date | null;
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
