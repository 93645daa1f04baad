import { BaseModel } from './base-model';
import type { StoredError } from './stored-error';

export type QueryJobStatus = 'active' | 'completed' | 'failed' | 'canceled' | 'expired';

export class QueryJob extends BaseModel {
  static override tableName = 'query_jobs';
  static override jsonAttributes = ['input', 'rows', 'error'];
  id!: string;
  workspaceId!: string;
  projectId!: string;
  queryId!: string;
  releaseVersion!: number;
  /** null for a member signed in to the console. */
  apiKeyId!: string | null;
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
