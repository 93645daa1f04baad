import { BaseModel } from './base-model';

export class PipelineSchedule extends BaseModel {
  static override tableName = 'pipeline_schedules';
  static override jsonAttributes = ['spec'];
  id!: string;
  workspaceId!: string;
  projectId!: string;
  pipelineId!: string;
  spec!: Record<string, unknown>;
  temporalScheduleId!: string;
  createdByMemberId!: string;
  /** The key whose launches these are; null for a member's (actorKind member) and for schedules made before keys were recorded. */
  createdByApiKeyId!: string | null;
  /** 'key': launches act as createdByApiKeyId; 'member': made in the console, launches act as createdByMemberId. */
  actorKind!: 'key' | 'member';
  createdAt!: Date;
}
