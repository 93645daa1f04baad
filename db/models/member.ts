import { BaseModel } from './base-model';

export class Member extends BaseModel {
  static override tableName = 'members';
  id!: string;
  workspaceId!: string;
  name!: string;
  role!: 'owner' | 'admin' | 'member';
  createdAt!: Date;
  removedAt!: Date | null;
}
