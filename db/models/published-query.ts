import { BaseModel } from './base-model';

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
