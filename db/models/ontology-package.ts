import { BaseModel } from './base-model';

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
