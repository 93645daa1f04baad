import { BaseModel } from './base-model';

export class Member extends BaseModel {
  static override tableName = 'members';
  id!: string;
  workspaceId!: string;
  name!: string;
  role!: 'owner' | 'admin' | 'member';
  /** Signs in to the console (unique within the workspace, without case); null for members made before it. */
  email!: string | null;
  /** argon2id, set through an invite; never leaves the service layer. */
  passwordHash!: string | null;
  /** Named grants an owner or admin gave the member (never implied by the role). */
  readPermissions!: string[];
  writePermissions!: string[];
  createdAt!: Date;
  removedAt!: Date | null;
}
