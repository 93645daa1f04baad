import { BaseModel } from './base-model';

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
