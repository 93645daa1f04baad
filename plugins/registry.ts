import { NotFoundError } from '../core/errors';
import type { CapabilityRuntime } from './capability';

const capabilities = new Map<string, CapabilityRuntime>();

/** Adds a capability to the in-code registry (plugins/index.ts registers each one once). */
export function registerCapability(runtime: CapabilityRuntime): void {
  capabilities.set(runtime.definition.name, runtime);
}

export function listCapabilities(): CapabilityRuntime[] {
  return [...capabilities.values()];
}

export function findCapability(name: string): CapabilityRuntime {
  const capability = capabilities.get(name);
  if (!capability) {
    const known = [...capabilities.keys()].join(', ') || 'none';
    throw new NotFoundError('capability', `Unknown capability "${name}". Known capabilities: ${known}.`);
  }
  return capability;
}
