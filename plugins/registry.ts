import { NotFoundError } from '../core/errors';
import type { CapabilityDefinition } from './capability';

const capabilities = new Map<string, CapabilityDefinition>();

/** Adds a capability to the in-code registry (each capability module registers itself once). */
export function registerCapability(definition: CapabilityDefinition): void {
  capabilities.set(definition.name, definition);
}

export function listCapabilities(): CapabilityDefinition[] {
  return [...capabilities.values()];
}

export function findCapability(name: string): CapabilityDefinition {
  const capability = capabilities.get(name);
  if (!capability) {
    const known = [...capabilities.keys()].join(', ') || 'none';
    throw new NotFoundError('capability', `Unknown capability "${name}". Known capabilities: ${known}.`);
  }
  return capability;
}
