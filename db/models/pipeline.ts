import { BaseModel } from './base-model';

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
