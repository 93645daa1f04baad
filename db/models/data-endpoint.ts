import { BaseModel } from './base-model';
import { PluginInstallation } from './plugin-installation';

export interface SchemaHints {
  primaryKey?: string[];
  columns?: Array<{ name: string; type?: string; nullable?: boolean; description?: string }>;
}

export class DataEndpoint extends BaseModel {
  static override tableName = 'data_endpoints';
  static override jsonAttributes = ['target', 'schemaHints'];
  id!: string;
  workspaceId!: string;
  pluginInstallationId!: string;
  name!: string;
  namespace!: string;
  role!: string;
  contractKind!: string;
  target!: Record<string, unknown>;
  /** The data the target reaches (its capability's dataIdentity): guards are kept on it. */
  dataIdentity!: string;
  schemaHints!: SchemaHints | null;
  freshness!: string | null;
  ownerTeam!: string | null;
  trustRank!: string | null;
  description!: string | null;
  accepts!: string[];
  emits!: string[];
  createdByMemberId!: string;
  createdAt!: Date;
  updatedAt!: Date;
  installation?: PluginInstallation;

  // The composite key keeps the join inside the endpoint's own workspace.
  static override get relationMappings() {
    return {
      installation: {
        relation: BaseModel.BelongsToOneRelation,
        modelClass: PluginInstallation,
        join: {
          from: ['data_endpoints.workspaceId', 'data_endpoints.pluginInstallationId'],
          to: ['plugin_installations.workspaceId', 'plugin_installations.id'],
        },
      },
    };
  }
}
