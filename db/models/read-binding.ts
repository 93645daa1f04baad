import { BaseModel } from './base-model';

export interface BindingMapping {
  /** IRI template for subjects, e.g. https://example.com/customers/{id}; placeholders are endpoint fields. */
  subjectTemplate: string;
  /** Term property (or link) local name -> endpoint field. Links map a field to the target's IRI template. */
  properties: Record<string, string>;
  links?: Record<string, { field: string; targetTemplate: string }>;
}

export class ReadBinding extends BaseModel {
  static override tableName = 'read_bindings';
  static override jsonAttributes = ['mapping'];
  id!: string;
  workspaceId!: string;
  projectId!: string;
  ontologyPackageId!: string;
  termId!: string;
  dataEndpointId!: string;
  mapping!: BindingMapping;
  requiredReadPermissions!: string[];
  status!: 'active' | 'incompatible';
  createdByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
}
