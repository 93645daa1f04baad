import { BaseModel } from './base-model';

export class QueryExecution extends BaseModel {
  static override tableName = 'query_executions';
  id!: string;
  workspaceId!: string;
  projectId!: string;
  queryId!: string;
  releaseVersion!: number;
  /** null for a member signed in to the console. */
  apiKeyId!: string | null;
  memberId!: string;
  inputHash!: string;
  mode!: 'sync' | 'async';
  status!: string;
  durationMs!: number | null;
  rowCount!: number | null;
  jobId!: string | null;
  createdAt!: Date;
}
