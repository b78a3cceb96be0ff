/** `retrysafe-mcp probe` loads what talks to its server, not the ledgers, adapters and servers the serving commands need. */
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';

/** Every module `file` loads at start (its static imports, followed through the package's own files). */
function loaded(file: string, seen = new Set<string>()): Set<string> {
  for (const [, spec] of readFileSync(file, 'utf8').matchAll(/^(?:import|export) [^;]*?from '([^']+)'/gms)) {
    const name = spec!.startsWith('.') ? resolve(dirname(file), spec!) : spec!;
    if (seen.has(name)) continue;
    seen.add(name);
    if (spec!.startsWith('.')) loaded(name, seen);
  }
  return seen;
}

it('probe loads neither the serving commands nor the config, ledgers and runner', () => {
  const probe = [...loaded(fileURLToPath(new URL('../dist/probe.js', import.meta.url)))];
  expect(
    probe.filter((m) => /\/(commands|server|fence-server|fence-adapter)\.js$|^@retrysafe\/(config|core)$/.test(m)),
  ).toEqual([]);
  expect(probe.some((m) => m.endsWith('/fence/upstream.js'))).toBe(true);
});
