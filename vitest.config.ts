import { existsSync, readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// One vitest project per workspace package, named after its folder (`--project stripe`).
// A package with its own vitest.config.ts (e.g. for a globalSetup) uses it; the rest share these defaults.
const dirs = ['packages', 'adapters'].flatMap((group) =>
  readdirSync(group, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(`${group}/${d.name}/package.json`))
    .map((d) => `${group}/${d.name}`),
);

export const projectDefaults = {
  include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    projects: dirs.map((dir) =>
      existsSync(`${dir}/vitest.config.ts`)
        ? `${dir}/vitest.config.ts`
        : { test: { name: dir.split('/')[1]!, root: dir, ...projectDefaults } },
    ),
  },
});
