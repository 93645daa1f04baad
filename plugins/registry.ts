import { ConflictError, NotFoundError } from '../core/errors';
import type { CapabilityDefinition, CapabilityRuntime } from './capability';

/**
 * Capabilities by name, each with every contract version this Weft serves (SPEC 9: contracts are
 * versioned by the installed version). An installation keeps the version it was installed with:
 * its endpoints are validated, read and written by that version's runtime, and GET /plugins shows
 * that version's contract. New installations get the newest version.
 */
const capabilities = new Map<string, Map<string, CapabilityRuntime>>();

/** Orders dotted numeric versions ("1.10.0" after "1.9.2"); a version that is not numeric sorts by its text. */
export function compareVersions(a: string, b: string): number {
  const parts = (version: string) => version.split('.').map((part) => (/^\d+$/.test(part) ? Number(part) : NaN));
  const [left, right] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const [x, y] = [left[i] ?? 0, right[i] ?? 0];
    if (Number.isNaN(x) || Number.isNaN(y)) return a.localeCompare(b);
    if (x !== y) return x - y;
  }
  return 0;
}

/** Adds a capability version to the in-code registry (plugins/index.ts registers each one once). */
export function registerCapability(runtime: CapabilityRuntime): void {
  const { name, version } = runtime.definition;
  const versions = capabilities.get(name) ?? new Map<string, CapabilityRuntime>();
  versions.set(version, runtime);
  capabilities.set(name, versions);
}

/** Takes a capability version out of the registry (tests that register a version of their own). */
export function unregisterCapability(name: string, version: string): void {
  capabilities.get(name)?.delete(version);
}

const newest = (versions: Map<string, CapabilityRuntime>): CapabilityRuntime => [...versions.values()].sort((a, b) => compareVersions(b.definition.version, a.definition.version))[0];

/** The newest version of every capability: what new installations get. */
export function listCapabilities(): CapabilityRuntime[] {
  return [...capabilities.values()].filter((versions) => versions.size > 0).map(newest);
}

function versionsOf(name: string): Map<string, CapabilityRuntime> {
  const versions = capabilities.get(name);
  if (!versions?.size) {
    const known = [...capabilities.keys()].join(', ') || 'none';
    throw new NotFoundError('capability', `Unknown capability "${name}". Known capabilities: ${known}.`);
  }
  return versions;
}

/**
 * A capability's runtime: of the installed version when one is named (an installation's
 * capabilityVersion), else the newest. An installed version this Weft does not serve is refused
 * (409 capability_version_unavailable) rather than handled by another version's contract.
 */
export function findCapability(name: string, installedVersion?: string): CapabilityRuntime {
  const versions = versionsOf(name);
  if (installedVersion === undefined) return newest(versions);
  const runtime = versions.get(installedVersion);
  if (!runtime) {
    const served = [...versions.keys()].sort(compareVersions).join(', ');
    throw new ConflictError(
      'capability_version_unavailable',
      `This installation uses ${name} ${installedVersion}, which this Weft does not serve (it serves ${served}): an operator reinstalls the plugin to move its endpoints to a served version.`,
      { capability: name, installedVersion, servedVersions: served.split(', ') },
    );
  }
  return runtime;
}

/** The contract of an installed version, or undefined when this Weft does not serve it. */
export function installedDefinition(name: string, installedVersion: string): CapabilityDefinition | undefined {
  return capabilities.get(name)?.get(installedVersion)?.definition;
}
