import { BaseModel } from './base-model';

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
