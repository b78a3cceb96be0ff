// The runner's rooms (src/runner/) and the rest of core import one way: no file reaches itself through
// its imports (type-only imports included), so each room can be read, and tested, from below.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    if (d.isDirectory()) return sources(p);
    return d.name.endsWith('.ts') && !d.name.endsWith('.test.ts') ? [p] : [];
  });
}

/** Relative imports and re-exports of one file (static `from '...'` and dynamic `import('...')`), as source paths. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specs = [...text.matchAll(/\bfrom\s+'(\.[^']+)'|\bimport\(\s*'(\.[^']+)'\s*\)/g)].map((m) => m[1] ?? m[2]!);
  return specs.map((s) => resolve(dirname(file), s.replace(/\.js$/, '.ts')));
}

function graphOf(files: readonly string[]): Map<string, string[]> {
  return new Map(files.map((f) => [f, importsOf(f).filter((t) => files.includes(t))]));
}

function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (f: string) => {
    state.set(f, 'open');
    stack.push(f);
    for (const t of graph.get(f) ?? []) {
      if (state.get(t) === 'open') found.push([...stack.slice(stack.indexOf(t)), t].map((p) => relative(SRC, p)));
      else if (!state.has(t)) visit(t);
    }
    stack.pop();
    state.set(f, 'done');
  };
  for (const f of graph.keys()) if (!state.has(f)) visit(f);
  return found;
}

describe('core import graph', () => {
  it('the runner lives in rooms: src/runner/ holds the runner, and no runner.ts beside it', () => {
    const files = sources(SRC).map((f) => relative(SRC, f));
    expect(files).not.toContain('runner.ts');
    expect(files.filter((f) => f.startsWith('runner/')).length).toBeGreaterThan(5);
  });

  it('has no import cycle (type-only imports count)', () => {
    expect(cycles(graphOf(sources(SRC)))).toEqual([]);
  });

  it('the check sees a cycle when there is one', () => {
    const [a, b, c] = [join(SRC, 'a.ts'), join(SRC, 'b.ts'), join(SRC, 'c.ts')];
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [c]],
          [c, []],
        ]),
      ),
    ).toEqual([]);
    expect(
      cycles(
        new Map([
          [a, [b]],
          [b, [c]],
          [c, [a]],
        ]),
      ),
    ).toEqual([['a.ts', 'b.ts', 'c.ts', 'a.ts']]);
  });
});
