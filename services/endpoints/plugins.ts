import { InputError, NotFoundError } from '../../core/errors';
import { summarizeProblems, validateWithSchema, JsonSchema } from '../../core/schema-validator';
import { decryptSecret, encryptSecret } from '../../core/secrets';
import type { Executor } from '../../db/connection';
import { PluginInstallation, Workspace } from '../../db/models';
import type { InstallationContext } from '../../plugins/capability';
import { findCapability, installedDefinition } from '../../plugins';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext } from '../operations/context';
import { presentInstallation } from './presenters';

/** Splits a validated config into clear settings and credentials (schema properties marked x-weft-secret). */
function splitSecrets(schema: JsonSchema, config: Record<string, unknown>): { settings: Record<string, unknown>; credentials: Record<string, unknown> } {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const settings: Record<string, unknown> = {};
  const credentials: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(config)) {
    (properties[name]?.['x-weft-secret'] ? credentials : settings)[name] = value;
  }
  return { settings, credentials };
}

/** Operator action (admin CLI): installs a capability in a workspace. The public API installs no plugins. */
export async function installPlugin(db: Executor, encryptionKey: Buffer, workspaceId: string, capabilityName: string, config: unknown): Promise<PluginInstallation> {
  const runtime = findCapability(capabilityName);
  const capability = runtime.definition;
  const workspace = await Workspace.query(db).findById(workspaceId);
  if (!workspace) throw new NotFoundError('workspace', `No workspace ${workspaceId}.`);
  if (!config || typeof config !== 'object' || Array.isArray(config)) throw new InputError('invalid_config', 'The plugin config must be a JSON object.');
  const valid = validateWithSchema<Record<string, unknown>>(capability.installationSchema, config, `${capability.name} installation config`);
  const problems = runtime.validateInstallation?.(valid) ?? [];
  if (problems.length) throw new InputError('invalid_config', `The ${capability.name} installation config is invalid: ${summarizeProblems(problems)}`, problems);
  const { settings, credentials } = splitSecrets(capability.installationSchema, valid);
  return PluginInstallation.query(db).insertAndFetch({
    workspaceId,
    capability: capability.name,
    capabilityVersion: capability.version,
    settings,
    encryptedCredentials: Object.keys(credentials).length ? encryptSecret(JSON.stringify(credentials), encryptionKey) : null,
  });
}

/** An installation with its credentials decrypted, for capability code only; never returned or logged. */
export function openInstallation(installation: PluginInstallation, encryptionKey: Buffer): InstallationContext {
  return {
    id: installation.id,
    workspaceId: installation.workspaceId,
    settings: installation.settings,
    credentials: installation.encryptedCredentials ? JSON.parse(decryptSecret(installation.encryptedCredentials, encryptionKey)) : {},
  };
}

/**
 * Installed capabilities of a workspace, each with the contract of the version it was installed
 * with (SPEC 9: forms follow the installed version's contract), and the newest version this Weft
 * serves. An installed version this Weft no longer serves is listed with `available: false` and
 * an empty contract: its endpoints are refused until an operator reinstalls the plugin.
 */
export async function listInstalledPlugins(ctx: OperationContext, page: PageRequest) {
  const { db, principal: { workspaceId } } = ctx;
  const { rows, pagination } = await pageOf(PluginInstallation.query(db).where({ workspaceId }), page);
  return {
    plugins: rows.map((row) => presentInstallation(row, installedDefinition(row.capability, row.capabilityVersion), latestVersionOf(row.capability))),
    pagination,
  };
}

/** The newest version of a capability this Weft serves, or null for a capability it no longer has. */
function latestVersionOf(name: string): string | null {
  try {
    return findCapability(name).definition.version;
  } catch {
    return null;
  }
}
