import assert from 'node:assert/strict';
import { spawn, ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { acquireLease, cloneLease, formerPortLease, machineLeaseRoot, releaseLease, startShared } from '../../../scripts/infra/leases';
import { clusterOwnershipProblem } from '../../../scripts/infra/postgres';
import { temporalCliOnPath, temporalLease } from '../../../scripts/infra/temporal-server';
import { portIsOpen, run } from '../../../scripts/infra/process';
import { projectRoot, toolsDir } from '../../../core/paths';
import { temporalSettings } from '../../../core/temporal-config';
import { freePort } from '../../support/processes';

/** A process of some clone holding a lease on the dev server (test/unit/ops/support/dev-server-holder.ts), run by node itself. */
function startHolder(env: Record<string, string>): Promise<{ child: ChildProcess; output: () => string; release(): Promise<string> }> {
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(projectRoot, 'test/unit/ops/support/dev-server-holder.ts')], {
    cwd: projectRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk;
      if (/ready \d+/.test(output)) {
        child.stdout!.off('data', onData);
        child.stdout!.on('data', (more: Buffer) => (output += more));
        resolve({
          child,
          output: () => output,
          async release() {
            child.kill('SIGTERM');
            await exited;
            return output;
          },
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
    void exited.then(() => reject(new Error(`the holder exited before it was ready:\n${output}`)));
  });
}

const isDevServer = (pid: number) => existsSync(`/proc/${pid}/cmdline`) && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('start-dev');
const processGroup = (pid: number) => {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
};

/** Runs `work` with environment variables set, restoring them after. */
async function withEnv<T>(vars: Record<string, string>, work: () => T | Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  Object.assign(process.env, vars);
  try {
    return await work();
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

describe('Scripts that share a machine', function () {
  let scratch: string;
  const sleepers: ChildProcess[] = [];
  /** A live process standing in for a Weft process of some clone (a lease holder is a pid). */
  const anotherProcess = (): number => {
    const child = spawn('sleep', ['600'], { stdio: 'ignore' });
    sleepers.push(child);
    return child.pid!;
  };
  const exit = async (pid: number) => {
    const child = sleepers.find((candidate) => candidate.pid === pid)!;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  };

  beforeEach(() => {
    scratch = mkdtempSync(path.join(os.tmpdir(), 'weft-shared-machine-'));
  });
  afterEach(() => {
    for (const child of sleepers.splice(0)) child.kill('SIGKILL');
    rmSync(scratch, { recursive: true, force: true });
  });

  describe('Temporal dev server leases', () => {
    it('follow the port: two clones get the same lease folder for it, and different ones for their own clusters', async () => {
      const leaseRoot = path.join(scratch, 'leases');
      const inClone = (clone: string) =>
        withEnv({ WEFT_DATA_DIR: path.join(scratch, clone, '.data'), WEFT_LEASE_DIR: leaseRoot }, () => ({ temporal: temporalLease(), postgres: cloneLease('postgres') }));
      const [first, second] = [await inClone('clone-a'), await inClone('clone-b')];
      assert.equal(first.temporal, second.temporal, 'one Temporal port, one lease folder');
      assert.ok(first.temporal.startsWith(leaseRoot), first.temporal);
      assert.match(first.temporal, /temporal-127\.0\.0\.1-7233$/);
      assert.notEqual(first.postgres, second.postgres, 'each clone leases its own cluster');
    });

    it("live in one folder per user that the session's XDG_RUNTIME_DIR and TMPDIR do not move, private to the user", async () => {
      const uid = process.getuid!();
      const roots = [
        await withEnv({ WEFT_LEASE_DIR: '', XDG_RUNTIME_DIR: path.join(scratch, 'run'), TMPDIR: path.join(scratch, 'tmp') }, machineLeaseRoot), // a desktop session
        await withEnv({ WEFT_LEASE_DIR: '', XDG_RUNTIME_DIR: '', TMPDIR: '' }, machineLeaseRoot), // ssh, cron or sudo
      ];
      assert.deepEqual(roots, [`/tmp/weft-leases-${uid}`, `/tmp/weft-leases-${uid}`]);
      const root = statSync(roots[0]);
      assert.equal(root.uid, uid);
      assert.equal(root.mode & 0o777, 0o700);
    });

    it('are shared with processes of earlier code, which lease in the runtime folder: the server stays while either holds a lease', async () => {
      mkdirSync(path.join(scratch, 'run'));
      await withEnv({ WEFT_LEASE_DIR: '', XDG_RUNTIME_DIR: path.join(scratch, 'run') }, async () => {
        const lease = path.join(scratch, 'leases', 'temporal-127.0.0.1-7233');
        const former = formerPortLease(lease)!;
        assert.equal(former, path.join(scratch, 'run', 'weft-leases', 'temporal-127.0.0.1-7233'));
        const earlier = anotherProcess();
        acquireLease(former, true, earlier); // earlier code started the server
        let stops = 0;
        const join = () => startShared(lease, () => Promise.resolve({ startedHere: false }), () => void stops++, { alsoLeasedIn: [former] });

        await (await join()).release();
        assert.equal(stops, 0, 'the earlier process that started the server still runs: it stops it');
        const current = await join();
        await exit(earlier);
        assert.equal(releaseLease(former, earlier), false, 'the earlier code sees the current lease and leaves the server running');
        await current.release();
        assert.equal(stops, 1, 'the last holder stops it');
      });
    });

    it("keep a server that a second clone reuses running when the first clone's process exits, and stop it after the last one", async () => {
      const lease = path.join(scratch, 'leases', 'temporal-127.0.0.1-7233');
      const firstClone = anotherProcess();
      const secondClone = anotherProcess();
      acquireLease(lease, true, firstClone); // started the server
      acquireLease(lease, false, secondClone); // reused it
      await exit(firstClone);
      assert.equal(releaseLease(lease, firstClone), false, 'the second clone still holds a lease: the server stays');
      assert.equal(releaseLease(lease, secondClone), true, 'the last holder, its starter gone, stops it');
    });

    it('leave a server its starter still runs to the starter, and let the starter stop it when it is last', () => {
      const lease = path.join(scratch, 'leases', 'temporal-127.0.0.1-7233');
      const starter = anotherProcess();
      const visitor = anotherProcess();
      acquireLease(lease, true, starter);
      acquireLease(lease, false, visitor);
      assert.equal(releaseLease(lease, visitor), false, 'the starter is alive and stops it itself');
      assert.equal(releaseLease(lease, starter), true);
    });

    it('ignore lease files of processes that are gone (a crashed run)', async () => {
      const lease = path.join(scratch, 'leases', 'temporal-127.0.0.1-7233');
      const crashed = anotherProcess();
      acquireLease(lease, false, crashed);
      await exit(crashed);
      acquireLease(lease, true);
      writeFileSync(path.join(lease, 'dev-server.pid'), '12345');
      assert.equal(releaseLease(lease), true);
    });
  });

  describe('a dev server shared by two clones (real processes)', function () {
    this.timeout(180_000);
    const { cliVersion } = temporalSettings().devServer;
    const cliBuilt = existsSync(path.join(toolsDir(), `temporal-cli-${cliVersion}`, 'temporal')) || temporalCliOnPath(cliVersion) !== undefined;

    it("runs in its own process group, outlives the first clone's exit while the second holds a lease, and stops after the second", async function () {
      if (!cliBuilt) this.skip(); // npm test builds the pinned CLI; the unit tier does not
      // Ports of its own, so the machine's shared dev server is not involved.
      const ports = { WEFT_TEMPORAL_PORT: String(await freePort()), WEFT_TEMPORAL_UI_PORT: String(await freePort()), WEFT_LEASE_DIR: path.join(scratch, 'leases') };
      const clone = (name: string) => ({ ...ports, WEFT_DATA_DIR: path.join(scratch, name, '.data') });
      const port = Number(ports.WEFT_TEMPORAL_PORT);

      const first = await startHolder(clone('clone-a'));
      let second: Awaited<ReturnType<typeof startHolder>> | undefined;
      const serverPid = Number(/ready (\d+) started/.exec(first.output())?.[1]);
      try {
        assert.ok(serverPid > 0, first.output());
        assert.equal(processGroup(serverPid), serverPid, 'the dev server leads its own process group: a Ctrl-C to Weft does not reach it');
        assert.notEqual(processGroup(serverPid), processGroup(first.child.pid!));

        second = await startHolder(clone('clone-b'));
        assert.match(second.output(), new RegExp(`ready ${serverPid} reused`), 'the second clone reuses it, holding a lease in the same folder');

        assert.match(await first.release(), /released/);
        assert.equal(await portIsOpen('127.0.0.1', port), true, "the first clone's exit leaves the server to the second");
        assert.equal(isDevServer(serverPid), true);

        assert.match(await second.release(), /released/);
        second = undefined;
        assert.equal(isDevServer(serverPid), false, 'the last holder stopped it, and waited for it to exit');
        assert.equal(await portIsOpen('127.0.0.1', port), false);
      } finally {
        first.child.kill('SIGKILL');
        second?.child.kill('SIGKILL');
        if (isDevServer(serverPid)) process.kill(serverPid, 'SIGKILL');
      }
    });
  });

  describe('a temporal CLI on PATH', () => {
    const fakeCli = (folder: string, output: string, executable = true) => {
      mkdirSync(path.join(scratch, folder), { recursive: true });
      const file = path.join(scratch, folder, 'temporal');
      writeFileSync(file, `#!/bin/sh\n[ "$1" = "--version" ] && echo "${output}"\n`);
      chmodSync(file, executable ? 0o755 : 0o644);
      return path.join(scratch, folder);
    };

    it('is used when it reports the pinned version, so no Go build is needed', () => {
      const folder = fakeCli('bin', 'temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)');
      assert.equal(temporalCliOnPath('v1.5.1', `/nonexistent${path.delimiter}${folder}`), path.join(folder, 'temporal'));
    });

    it('is passed over for another version, a development build or a file that is not executable', () => {
      const other = fakeCli('other', 'temporal version 1.4.0 (Server 1.28.0, UI 2.40.0)');
      const dev = fakeCli('dev', 'temporal version 0.0.0-DEV (Server 1.29.1, UI 2.42.1)');
      const plain = fakeCli('plain', 'temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)', false);
      assert.equal(temporalCliOnPath('v1.5.1', [other, dev, plain].join(path.delimiter)), undefined);
      const right = fakeCli('right', 'temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)');
      assert.equal(temporalCliOnPath('v1.5.1', [other, right].join(path.delimiter)), path.join(right, 'temporal'), 'the first one of the pinned version');
    });
  });

  describe('a PostgreSQL cluster folder created by another user', () => {
    const isRoot = process.getuid?.() === 0;
    const uidOf = (user: string) => Number(run('id', ['-u', user]).trim());
    const cluster = (owner: number) => {
      const dir = path.join(scratch, '.data', 'postgres');
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'PG_VERSION'), '15\n');
      chownSync(dir, owner, owner);
      return dir;
    };

    before(function () {
      if (!isRoot) this.skip(); // handing folders to other users needs root
    });

    it('is reported to a later run as another user, with what to do', () => {
      const nobody = uidOf('nobody');
      const dir = cluster(uidOf('postgres'));
      const problem = clusterOwnershipProblem(dir, { uid: nobody, root: false });
      assert.ok(problem, 'a problem is reported');
      assert.match(problem, /belongs to postgres \(an earlier run as root/);
      assert.match(problem, new RegExp(`sudo chown -R nobody ${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
      assert.match(problem, /sudo npm start/);
      assert.equal(clusterOwnershipProblem(dir, { uid: uidOf('postgres'), root: true }), null, 'root runs it as postgres: fine');
    });

    it('is reported to a run as root when a user created it, and a cluster outside the clone is reported to a user', () => {
      const nobody = uidOf('nobody');
      const dir = cluster(nobody);
      assert.match(clusterOwnershipProblem(dir, { uid: uidOf('postgres'), root: true }) ?? '', /belongs to nobody, who created it without root.*Run as nobody instead/);
      assert.equal(clusterOwnershipProblem(dir, { uid: nobody, root: false }), null, 'its creator may run it');

      rmSync(path.join(dir, 'PG_VERSION'));
      writeFileSync(path.join(dir, 'LOCATION'), 'The cluster lives in /var/lib/postgresql/weft-clusters/abc (the postgres user cannot reach this folder).\n');
      assert.match(clusterOwnershipProblem(dir, { uid: nobody, root: false }) ?? '', /created by a run as root and lives outside the clone .*weft-clusters\/abc.*Run as root again/);
      assert.equal(clusterOwnershipProblem(path.join(scratch, 'fresh'), { uid: nobody, root: false }), null, 'a fresh clone has nothing to report');
    });
  });
});
