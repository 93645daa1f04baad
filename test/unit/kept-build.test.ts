import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensureBuilt, filesUnder, KeptBuild } from '../../scripts/kept-build';

// The production build and the console's bundle are kept (scripts/kept-build.ts) and made again
// only when what they are built from changed: by content, not file times.
describe('A kept build', () => {
  let scratch: string;
  let builds: number;
  let kept: KeptBuild;
  beforeEach(() => {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'weft-kept-build-'));
    mkdirSync(path.join(scratch, 'src', 'nested'), { recursive: true });
    writeFileSync(path.join(scratch, 'src', 'a.ts'), 'a');
    writeFileSync(path.join(scratch, 'src', 'nested', 'b.ts'), 'b');
    builds = 0;
    kept = {
      name: 'a test build',
      out: path.join(scratch, 'out'),
      inputs: () => filesUnder(path.join(scratch, 'src'), () => false),
      build(into) {
        builds++;
        mkdirSync(into);
        const sources = filesUnder(path.join(scratch, 'src'), () => false);
        writeFileSync(path.join(into, 'built.txt'), sources.map((file) => readFileSync(file, 'utf8')).join(''));
      },
    };
  });
  afterEach(() => rmSync(scratch, { recursive: true, force: true }));
  const built = () => readFileSync(path.join(kept.out, 'built.txt'), 'utf8');

  it('is built once and kept while its inputs are as they were, a rewrite of the same content included', () => {
    assert.equal(ensureBuilt(kept), true);
    assert.equal(built(), 'ab');
    writeFileSync(path.join(scratch, 'src', 'a.ts'), 'a');
    assert.equal(ensureBuilt(kept), false);
    assert.equal(builds, 1);
  });

  it('is built again, replacing the old build whole, when an input changes, is added or is renamed', () => {
    ensureBuilt(kept);
    writeFileSync(path.join(kept.out, 'left-over.txt'), 'from the old build');
    writeFileSync(path.join(scratch, 'src', 'a.ts'), 'A');
    assert.equal(ensureBuilt(kept), true);
    assert.equal(built(), 'Ab');
    assert.equal(existsSync(path.join(kept.out, 'left-over.txt')), false, 'nothing of the old build stays');
    writeFileSync(path.join(scratch, 'src', 'c.ts'), '');
    assert.equal(ensureBuilt(kept), true);
    rmSync(path.join(scratch, 'src', 'c.ts'));
    writeFileSync(path.join(scratch, 'src', 'd.ts'), '');
    assert.equal(ensureBuilt(kept), true, 'the same contents under another name');
    assert.equal(builds, 4);
    assert.deepEqual(readdirSync(scratch).sort(), ['out', 'src'], 'no build beside it is left behind');
  });

  it('lists the files under a folder without the folders it skips or their contents', () => {
    const listed = filesUnder(path.join(scratch, 'src'), (relative, entry) => entry.isDirectory() && relative === 'nested');
    assert.deepEqual(listed, [path.join(scratch, 'src', 'a.ts')]);
  });
});
