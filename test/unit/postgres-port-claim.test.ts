import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { claimPort, portIsClaimed } from '../../scripts/infra/postgres';

// A cluster stopped for a restart claims its port, so another clone choosing a port for its own
// cluster passes it by instead of taking it while it looks free.
describe('PostgreSQL port claims', () => {
  let folder: string;
  let former: string | undefined;
  before(() => {
    former = process.env.WEFT_LEASE_DIR;
    folder = mkdtempSync(path.join(os.tmpdir(), 'weft-claims-'));
    process.env.WEFT_LEASE_DIR = folder;
  });
  after(() => {
    if (former === undefined) delete process.env.WEFT_LEASE_DIR;
    else process.env.WEFT_LEASE_DIR = former;
    rmSync(folder, { recursive: true, force: true });
  });

  it('holds a port while its claimer lives, and frees it when released', () => {
    const claim = claimPort(54399);
    assert.equal(portIsClaimed(54399), true);
    assert.equal(portIsClaimed(54398), false, 'other ports stay free');
    claim.release();
    assert.equal(portIsClaimed(54399), false);
  });

  it('frees the claim of a process that died without releasing it', () => {
    const gone = spawnSync(process.execPath, ['-e', '0']).pid!;
    claimPort(54397, gone);
    assert.equal(portIsClaimed(54397), false);
  });
});
