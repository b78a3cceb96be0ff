import { existsSync, readdirSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// One vitest project per workspace package, named after its folder (`--project stripe`).
// A package with its own vitest.config.ts (e.g. for a globalSetup) uses it; the rest share these defaults.
const dirs = ['packages', 'adapters'].flatMap((group) =>
  readdirSync(group, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(`${group}/${d.name}/package.json`))
    .map((d) => `${group}/${d.name}`),
);

export const projectDefaults = {
  include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  // Only bounds a hang: the slowest tests without a bound of their own (a drill of every operation, the explorer's
  // longest interleaving) must not run out of it on a loaded machine.
  testTimeout: 120_000,
  hookTimeout: 120_000,
  // A poll waits for a child process, a server or a timer: its deadline only bounds a hang, so it holds on a loaded
  // machine (vitest's default is for in-process waits).
  expect: { poll: { timeout: 20_000 } },
  pool: 'forks' as const,
};

// These files drive child processes, drills and installs for tens of seconds each. Started first, they run
// beside the many short files instead of forming a tail at the end (vitest orders by project name, and a
// fresh clone has no timings from an earlier run).
const slowFirst = [
  'packages/dbos/test/resolution-crash.test.ts',
  'packages/dbos/test/crash-recovery.test.ts',
  'packages/dbos/test/dbos-step.test.ts',
  'packages/testkit/test/crash-drill.test.ts',
  'packages/mcp/test/fence.test.ts',
  'packages/testkit/test/crash-slow-network.test.ts',
  'packages/ledger-postgres/test/multi-process.test.ts',
  'packages/release/test/release.test.ts',
  'packages/dbos/test/concurrent-executions.test.ts',
  'packages/mcp/test/fence-upstream.test.ts',
  'packages/bench/test/wal-floor.test.ts',
  'packages/cli/test/fixes.test.ts',
  'packages/testkit/test/explorer/shipped-cards.test.ts',
  'packages/cli/test/drill.test.ts',
];

class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (f: TestSpecification) => {
      const i = slowFirst.findIndex((path) => f.moduleId.endsWith(path));
      return i === -1 ? slowFirst.length : i;
    };
    // Array.prototype.sort is stable: the rest keep vitest's order (failed, then slowest, per project).
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    // Most files wait on child processes, sockets and timers rather than on the CPU: one worker more than
    // there are cores keeps the cores busy (vitest's default, one less, runs a file at a time on two cores).
    maxWorkers: availableParallelism() + 1,
    sequence: { sequencer: SlowFirstSequencer },
    projects: dirs.map((dir) =>
      existsSync(`${dir}/vitest.config.ts`)
        ? `${dir}/vitest.config.ts`
        : { test: { name: dir.split('/')[1]!, root: dir, ...projectDefaults } },
    ),
  },
});
