// An API key as the API answers it (presenters.ts), in a module of no imports so the console's
// pages (console/web) read the same type rather than a copy of it.

export interface ApiKeyView {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  readPermissions: string[];
  writePermissions: string[];
  projectIds: string[];
  workspaceResources: boolean;
  expiresAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
  createdByMemberId: string;
}
