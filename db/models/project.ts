import { BaseModel } from './base-model';

export class Project extends BaseModel {
  static override tableName = 'projects';
  id!: string;
  workspaceId!: string;
  name!: string;
  description!: string;
  createdAt!: Date;
  updatedAt!: Date;
}
