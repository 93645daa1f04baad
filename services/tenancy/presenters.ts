import type { ApiKey, Member, Project } from '../../db/models';
import type { ApiKeyView } from './api-key-view';

export type { ApiKeyView } from './api-key-view';

// The views the tenancy operations answer with. A presenter shapes rows and what its service read
// for them, and queries nothing.

export interface ProjectView {
  id: string;
  name: string;
  description: string;
  createdAt: string;
  updatedAt: string;
}

export const presentProject = (p: Project): ProjectView => ({
  id: p.id,
  name: p.name,
  description: p.description,
  createdAt: p.createdAt.toISOString(),
  updatedAt: p.updatedAt.toISOString(),
});

export function presentApiKey(key: ApiKey): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    readPermissions: key.readPermissions,
    writePermissions: key.writePermissions,
    projectIds: key.projectIds,
    workspaceResources: key.workspaceResources,
    expiresAt: key.expiresAt ? key.expiresAt.toISOString() : null,
    lastUsedAt: key.lastUsedAt ? key.lastUsedAt.toISOString() : null,
    createdAt: key.createdAt.toISOString(),
    createdByMemberId: key.createdByMemberId,
  };
}

export interface MemberView {
  id: string;
  name: string;
  email: string | null;
  role: Member['role'];
  readPermissions: string[];
  writePermissions: string[];
  /** Has set a password through an invite. */
  canSignIn: boolean;
  createdAt: string;
}

export const presentMember = (member: Member): MemberView => ({
  id: member.id,
  name: member.name,
  email: member.email,
  role: member.role,
  readPermissions: member.readPermissions,
  writePermissions: member.writePermissions,
  canSignIn: member.passwordHash !== null,
  createdAt: member.createdAt.toISOString(),
});
