// Registers every built-in capability. Import this module (not the registry) where capabilities are used.
import type { CapabilityRuntime } from './capability';
import { registerCapability } from './registry';
import { managedTableCapability } from './managed-table';
import { postgresTableCapability } from './postgres-table';
import { httpDatasetCapability } from './http-dataset';

const builtIns: CapabilityRuntime[] = [httpDatasetCapability, managedTableCapability, postgresTableCapability];
for (const runtime of builtIns) registerCapability(runtime);

export { findCapability, installedDefinition, listCapabilities } from './registry';
