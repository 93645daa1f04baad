import { BaseModel } from './base-model';

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
