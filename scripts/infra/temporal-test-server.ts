import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { toolsDir } from '../../core/paths';
import { temporalSettings } from '../../core/temporal-config';
import { run, say } from './process';

/** Resolves io.temporal:temporal-test-server and its runtime dependencies (a pom of its own, never the project's). */
const pom = (version: string) => `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>weft.tools</groupId>
  <artifactId>temporal-test-server</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>io.temporal</groupId>
      <artifactId>temporal-test-server</artifactId>
      <version>${version}</version>
    </dependency>
  </dependencies>
</project>
`;

/**
 * The executable the SDK runs as `<launcher> <port>` (an 'existing-path' server). A small heap
 * and the serial collector: the server holds one test's workflows, on a machine of two cores.
 */
const LAUNCHER = `#!/bin/sh
# Temporal's time-skipping test server (the Java SDK's), on the JVM.
exec "\${JAVA_HOME:+$JAVA_HOME/bin/}java" -Xmx256m -XX:+UseSerialGC -cp "$(dirname "$0")/lib/*" io.temporal.testserver.TestServer "$@"
`;

/**
 * Temporal's time-skipping test server, fetched once per machine from Maven Central with `mvn`
 * into the shared tools folder, like the Temporal CLI: the path of its launcher. The SDK's own
 * way to get it is a download from GitHub. Needs a JDK's `java` (17 here) and Maven.
 */
export function ensureTemporalTestServer(): string {
  const { version } = temporalSettings().testServer;
  const dir = path.join(toolsDir(), `temporal-test-server-${version}`);
  const launcher = path.join(dir, 'temporal-test-server');
  if (existsSync(launcher)) return launcher;

  say(`fetching the Temporal test server ${version} from Maven Central into ${dir} (first run only)…`);
  // Fetched into a scratch folder and renamed, so an interrupted fetch never leaves a launcher without its jars.
  const scratch = `${dir}.partial-${process.pid}`;
  mkdirSync(scratch, { recursive: true });
  try {
    writeFileSync(path.join(scratch, 'pom.xml'), pom(version));
    const args = ['-B', '-q', '-Dstyle.color=never', '-f', path.join(scratch, 'pom.xml'), 'dependency:copy-dependencies', '-DincludeScope=runtime', `-DoutputDirectory=${path.join(scratch, 'lib')}`];
    try {
      run('mvn', args, { stdio: ['ignore', 'inherit', 'inherit'] });
    } catch (error) {
      if (!/could not start/.test((error as Error).message)) throw error;
      throw new Error('The workflow unit tests run Temporal\'s test server on the JVM: install Maven and a JDK (apt-get install maven openjdk-17-jdk-headless).', { cause: error });
    }
    writeFileSync(path.join(scratch, 'temporal-test-server'), LAUNCHER, { mode: 0o755 });
    mkdirSync(path.dirname(dir), { recursive: true });
    if (!existsSync(launcher)) renameSync(scratch, dir);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return launcher;
}

if (require.main === module) process.stdout.write(`${ensureTemporalTestServer()}\n`);
