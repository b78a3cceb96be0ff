import { existsSync, readdirSync } from 'node:fs';
import { defineConfig } from 'vitest/config';

// One vitest project per workspace package, named after its folder (`--project stripe`).
const dirs = ['packages', 'adapters'].flatMap((group) =>
  readdirSync(group, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(`${group}/${d.name}/package.json`))
    .map((d) => `${group}/${d.name}`),
);

export default defineConfig({
  test: {
    projects: dirs.map((dir) => ({
      test: {
        name: dir.split('/')[1]!,
        root: dir,
        include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
        testTimeout: 60_000,
        hookTimeout: 60_000,
        pool: 'forks',
      },
    })),
  },
});
