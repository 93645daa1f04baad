import type { JsonSchema } from '../core/schema-validator';

export type EndpointRole = 'source' | 'destination' | 'ontology_store';

/** Decrypted installation: settings in clear, credentials only in memory. */
export interface InstallationContext {
  id: string;
  workspaceId: string;
  settings: Record<string, unknown>;
  credentials: Record<string, unknown>;
}

export interface FieldDescription {
  name: string;
  type: string;
  nullable?: boolean;
}

export interface CheckResult {
  ok: boolean;
  message: string;
  details?: Record<string, unknown>;
}

/** A versioned capability contract: what a plugin offers a workspace, and how to use it. */
export interface CapabilityDefinition {
  name: string;
  version: string;
  title: string;
  description: string;
  /** Roles this capability serves, each with its contract kind. */
  roles: Array<{ role: EndpointRole; contractKind: string }>;
  /** JSON Schema of an endpoint's `target` selector. Never host or password settings. */
  targetSchema: JsonSchema;
  /** JSON Schema of the installation config; properties with `x-weft-secret: true` are credentials, stored encrypted. */
  installationSchema: JsonSchema;
  accepts: string[];
  emits: string[];
  supports: {
    recordsRead: boolean;
    snapshotReads: boolean;
    transactionalWrites: boolean;
    schemaDiscovery: boolean;
    connectionCheck: boolean;
  };
}
