import { BaseModel } from './base-model';

export class PluginInstallation extends BaseModel {
  static override tableName = 'plugin_installations';
  id!: string;
  workspaceId!: string;
  capability!: string;
  capabilityVersion!: string;
  settings!: Record<string, unknown>;
  encryptedCredentials!: string | null;
  createdAt!: Date;
}
