import path from 'node:path';
import { projectRoot } from '../../core/paths';

/** Where the console's bundle is built (scripts/console-build.ts) and served from: beside its sources, git-ignored. */
export const consoleBuildDir = (): string => path.join(projectRoot, 'console', 'web', 'dist');
