import { filesUnder } from './kept-build';

/** The test files (`*.test.ts`) under `folder` at any depth, but those in the folders directly in it that `leftOut` names. */
export function testFiles(folder: string, leftOut: readonly string[] = []): string[] {
  return filesUnder(folder, (relative, entry) => entry.isDirectory() && leftOut.includes(relative)).filter((file) => file.endsWith('.test.ts'));
}
