/**
 * What the ingest bench reads from /proc while an ingest runs: the peak RSS of a process, and the
 * CPU time spent by processes (one process, or every PostgreSQL backend serving one database), so
 * each peer's cost is also known in CPU seconds, which other load on the machine does not change.
 */
import { readdirSync, readFileSync } from 'node:fs';

const CLOCK_TICKS = 100;

export function rssMb(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

/** The highest RSS a process has had since it started (the kernel's high-water mark, VmHWM). */
export function peakRssSinceStartMb(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

/** user + system CPU seconds of a process (all its threads), or undefined when it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  const times = cpuTimes(pid);
  return times && times.user + times.system;
}

/**
 * User and system CPU seconds of a process apart (all its threads, or its main thread alone), or
 * undefined when it is gone.
 */
export function cpuTimes(pid: number, mainThreadOnly = false): { user: number; system: number } | undefined {
  try {
    const stat = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { user: Number(fields[11]) / CLOCK_TICKS, system: Number(fields[12]) / CLOCK_TICKS };
  } catch {
    return undefined;
  }
}

/** PostgreSQL backends serving `database` on this machine: their titles read "postgres: USER DATABASE …". */
export function backendsOf(database: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      const match = /^postgres: \S+ (\S+) /.exec(title);
      if (match && match[1] === database) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

export interface Usage {
  peakRssMb: number;
  startRssMb: number;
  /** CPU seconds of the watched process. */
  cpuSeconds: number;
  /** CPU seconds of the database's backends, or null when none are visible (an external database). */
  postgresCpuSeconds: number | null;
}

/**
 * Samples every 200 ms: the RSS of `pid` (for its peak), and the CPU time of `pid` and of the
 * backends of `database`. A backend that ends between samples loses at most its last 200 ms.
 */
export function watchUsage(pid: number | undefined, database: string | undefined): { stop(): Usage } {
  const startRssMb = pid ? rssMb(pid) : 0;
  const startCpu = pid ? (cpuSeconds(pid) ?? 0) : 0;
  let peakRssMb = startRssMb;
  // Backends present at the start count from their CPU then; later ones from zero.
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  if (database) for (const backend of backendsOf(database)) first.set(backend, cpuSeconds(backend) ?? 0);
  const sample = () => {
    if (pid) {
      try {
        peakRssMb = Math.max(peakRssMb, rssMb(pid));
      } catch {
        // the process ended; its caller will say why
      }
    }
    if (database) {
      for (const backend of backendsOf(database)) {
        const cpu = cpuSeconds(backend);
        if (cpu !== undefined) last.set(backend, cpu);
      }
    }
  };
  const timer = setInterval(sample, 200);
  return {
    stop() {
      clearInterval(timer);
      sample();
      let postgres = 0;
      for (const [backend, cpu] of last) postgres += cpu - (first.get(backend) ?? 0);
      return {
        peakRssMb,
        startRssMb,
        cpuSeconds: pid ? (cpuSeconds(pid) ?? startCpu) - startCpu : 0,
        postgresCpuSeconds: database && last.size ? postgres : null,
      };
    },
  };
}
