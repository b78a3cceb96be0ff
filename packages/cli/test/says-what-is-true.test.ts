// Issue 44 item 4: what the CLI's README, the runbook it ships and the adapters' cards say about the
// command matches the command.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SCENARIOS } from '@retrysafe/testkit';
import { describe, expect, it } from 'vitest';
import { COMMANDS } from '../src/cli-config.js';
import { cardsOf, loadAdapters } from '../src/registry.js';
import { cli, REPO, tempDir } from './helpers.js';

const readme = readFileSync(join(REPO, 'packages/cli/README.md'), 'utf8');
const runbook = readFileSync(join(REPO, 'docs/runbook.md'), 'utf8');

/**
 * Each command mention (`` `retrysafe <words>`` or a `$ retrysafe <words>` line) in a text that names no
 * command. A group (`ledger`) names one only alone, as in a heading; with a word after it, the two must.
 */
function unknownCommands(text: string): string[] {
  const runs = new Set(COMMANDS.filter((c) => c.run).map((c) => c.name));
  const groups = new Set(COMMANDS.filter((c) => !c.run).map((c) => c.name));
  const bad: string[] = [];
  for (const m of text.matchAll(/(?:`|^\$ |\n\$ )retrysafe ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?/g)) {
    const [first, second] = [m[1]!, m[2]];
    const ok = groups.has(first)
      ? second === undefined || runs.has(`${first} ${second}`)
      : runs.has(`${first} ${second}`) || runs.has(first);
    if (!ok) bad.push(m[0].trim());
  }
  return bad;
}

describe('the CLI says what is true', () => {
  it('the README lists every drill scenario, and only those', () => {
    const paragraph = readme.slice(readme.indexOf('conformance scenarios'), readme.indexOf('on every\noperation'));
    expect([...paragraph.matchAll(/`([a-z-]+)`/g)].map((m) => m[1])).toEqual([...SCENARIOS]);
    // The testkit's README, which the guides send adapter authors to for every scenario's pass criteria.
    const testkit = readFileSync(join(REPO, 'packages/testkit/README.md'), 'utf8');
    const rows = [...testkit.matchAll(/^\| `([a-z-]+)` \|/gm)].map((m) => m[1]);
    expect(rows.sort()).toEqual([...SCENARIOS].sort());
  });

  it('every `retrysafe …` command in the README and the runbook exists', () => {
    expect(unknownCommands(readme)).toEqual([]);
    expect(unknownCommands(runbook)).toEqual([]);
  });

  it('the demo speaks of "the same key" only where a key travels', async () => {
    const dir = tempDir('demo-key');
    const r = await cli(['demo', '--db', join(dir, 'demo.db'), '--json'], { timeoutMs: 120_000 });
    expect(r.code).toBe(0);
    const steps = JSON.parse(r.stdout).steps as { operation: string; providerKey: string | null; timeline: string[] }[];
    const keyless = steps.filter((s) => s.providerKey === null);
    expect(keyless.map((s) => s.operation)).toContain('contacts.update');
    for (const s of keyless) expect(s.timeline.join('\n'), s.operation).not.toMatch(/same key/);
    expect(steps.find((s) => s.operation === 'invoices.create')!.timeline.join('\n')).toMatch(/same key/);
  });

  it('every `retrysafe …` command a shipped card names exists', async () => {
    const cards = [];
    for (const entry of await loadAdapters()) cards.push(...(await cardsOf(entry)));
    expect(cards.length).toBeGreaterThan(10);
    const bad = cards.flatMap((c) => unknownCommands(JSON.stringify(c.card)).map((x) => `${c.name}: ${x}`));
    expect(bad).toEqual([]);
  });
});
