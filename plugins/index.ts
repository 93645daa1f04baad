// Registers every built-in capability. Import this module (not the registry) where capabilities are used.
import type { CapabilityRuntime } from './capability';
import { registerCapability } from './registry';

const builtIns: CapabilityRuntime[] = [
  // Each capability module adds its runtime here.
];
for (const runtime of builtIns) registerCapability(runtime);

export { findCapability, listCapabilities } from './registry';
