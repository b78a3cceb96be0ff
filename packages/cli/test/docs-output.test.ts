// What the docs show the CLI printing must be what it prints. The runbook's `ledger handoffs` and
// `ledger show`: its two handed-off operations (one rejected, one whose lookup never could tell) are
// made on a SQLite ledger. The CLI README's `cards init`: run on a partial card. Each console block's
// output is matched line by line. Ids, times and millisecond counts are the run's own; `…` in a block
// stands for text (or, alone on a line, lines) left out.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRunner, createVirtualClock } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider } from '@retrysafe/sandbox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, REPO } from './helpers.js';

/** The console block that follows `heading` in a page: its command and what it prints. */
function consoleBlock(heading: string, file = 'docs/runbook.md'): { command: string; output: string } {
  const page = readFileSync(join(REPO, file), 'utf8');
  const at = page.indexOf(heading);
  const m = /```console\n\$ ([^\n]*)\n([\s\S]*?)```/.exec(page.slice(at));
  if (at < 0 || !m) throw new Error(`no console block after ${heading}`);
  return { command: m[1]!, output: m[2]! };
}

/** One line as a pattern: this run's ids, times and millisecond counts stand for any; `…` for any text. */
function linePattern(line: string): string {
  return line
    .split('…')
    .map((part) =>
      part
        .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        .replace(/[0-9a-f]{32}/g, '[0-9a-f]{32}')
        .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/g, '[0-9T:.Z-]{24}')
        .replace(/\d+ ms/g, '\\d+ ms'),
    )
    .join('.*?');
}

/** Whether `output` is what `shown` shows; a line that is only `…` stands for any number of lines. */
function shows(shown: string, output: string): boolean {
  const pattern = shown
    .trimEnd()
    .split('\n')
    .map((l) => (l.trim() === '…' ? '(?:[^\\n]*\\n)*?' : `${linePattern(l)}\\n`))
    .join('');
  return new RegExp(`^${pattern}$`).test(`${output.trimEnd()}\n`);
}

let dir: string;
let db: string;
let rejectedId: string;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'rs-runbook-'));
  db = join(dir, 'retrysafe.db');
  const clock = createVirtualClock(Date.UTC(2026, 10, 30, 1, 42));
  // No replay, a lookup by key: an unknown outcome is looked up, never re-sent.
  const provider = createSandboxProvider({
    replays: false,
    retentionMs: 86_400_000,
    parameterMatching: 'mismatch-error',
    concurrency: 'rejects-in-progress',
    lookup: 'get-by-key',
    clock: clock.now,
    sleep: clock.sleep,
  });
  const sandbox = createSandboxAdapter({ provider });
  const ledger = createSqliteLedger({ path: db });
  const runner = createRunner({ ledger, clock, random: () => 0.5 });
  provider.failNext({ kind: 'unknown-before-commit' });
  provider.failNextLookup(1_000, 100);
  const unclear = await runner.run(sandbox, 'records.create', { params: { ref: 'order-1' } });
  provider.failNext({ kind: 'rejected', message: 'ref is not valid' });
  const rejected = await runner.run(sandbox, 'records.create', { params: { ref: 'order-2' } });
  expect([unclear.status, rejected.status]).toEqual(['handed-off', 'handed-off']);
  rejectedId = rejected.businessOperationId;
  await ledger.close();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the runbook shows what the CLI prints', () => {
  it('the matcher refuses a line the output does not have', () => {
    expect(shows('a 1 ms\n…\nc', 'a 25 ms\nb\nb2\nc\n')).toBe(true);
    expect(shows('a\nc', 'a\nb\nc\n')).toBe(false);
    expect(shows('safe: mark-done, abandon', 'safe: resend-with, mark-done, abandon\n')).toBe(false);
  });

  it('2. Find what is waiting: ledger handoffs', async () => {
    const { command, output } = consoleBlock('## 2. Find what is waiting');
    expect(command).toBe('retrysafe ledger handoffs --db ./retrysafe.db');
    // As the page runs it: in the ledger's folder, the ledger named as the page names it.
    const r = await cli(command.split(' ').slice(1), { cwd: dir, env: { NO_COLOR: '1' } });
    expect(shows(output, r.stdout), `the runbook shows\n${output}\nthe CLI prints\n${r.stdout}`).toBe(true);
  });

  it('3. Read the packet: ledger show of the rejected operation', async () => {
    const { command, output } = consoleBlock('## 3. Read the packet');
    expect(command).toMatch(/^retrysafe ledger show sandbox\.records\.create:[0-9a-f]{32}$/);
    const r = await cli(['ledger', 'show', rejectedId], { cwd: dir, env: { NO_COLOR: '1' } });
    expect(shows(output, r.stdout), `the runbook shows\n${output}\nthe CLI prints\n${r.stdout}`).toBe(true);
  });
});

describe('the CLI README shows what cards init prints', () => {
  it('retrysafe cards init --from partial.yaml --out …', async () => {
    const { command, output } = consoleBlock('## `retrysafe cards init', 'packages/cli/README.md');
    expect(command).toBe('retrysafe cards init --from partial.yaml --out acme.orders.create.yaml');
    // The partial card the README shows, as a reader would save it.
    const readme = readFileSync(join(REPO, 'packages/cli/README.md'), 'utf8');
    const partial = /<!-- cards-init-partial -->\n```yaml\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(partial, 'the README shows the partial.yaml it runs cards init on').toBeDefined();
    writeFileSync(join(dir, 'partial.yaml'), partial!);
    const r = await cli(['cards', 'init', '--from', 'partial.yaml', '--out', 'acme.orders.create.yaml'], {
      cwd: dir,
      env: { NO_COLOR: '1' },
    });
    expect(r.code).toBe(0);
    expect(shows(output, r.stdout), `the README shows\n${output}\nthe CLI prints\n${r.stdout}`).toBe(true);
  });
});
