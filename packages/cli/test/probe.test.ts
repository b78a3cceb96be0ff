import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, REPO, tempDir } from './helpers.js';

// `retrysafe probe` against the orders MCP server written for the fence tests (no idempotency guard):
// the probe fires identical calls and counts the effects through list_orders.
const orders = join(REPO, 'packages/mcp/test/fixtures/orders-server.mjs');

/** Probes create_order for order `ref`, counting through list_orders; `flags` go before the server, `server` after it. */
const probe = (ref: string, flags: string[], server: string[] = []) =>
  cli([
    'probe',
    '--tool',
    'create_order',
    '--args',
    `{"customer":"c","ref":"${ref}","sku":"sku_1","quantity":1}`,
    '--count-tool',
    'list_orders',
    '--count-path',
    'orders',
    '--settle-ms',
    '200',
    ...flags,
    '--',
    process.execPath,
    orders,
    ...server,
  ]);
const nothing = ['--match', '{"ref":"nothing-has-this"}'];
/** A probe of tools named x, y at z: for a command line refused, or a server that fails, before any call. */
const bare = (...rest: string[]) => cli(['probe', '--tool', 'x', '--count-tool', 'y', '--count-path', 'z', ...rest]);

describe('retrysafe probe', () => {
  it('reports the duplicates of an unfenced server (exit 1) and writes a receipt', async () => {
    const receipt = join(tempDir('probe'), 'probe.json');
    const r = await probe('PO-7', ['--receipt', receipt], ['--reply-delay-ms', '300']);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/DUPLICATES: \d+ effects for one intent/);
    const written = JSON.parse(readFileSync(receipt, 'utf8')) as { verdict: string; effects: number };
    expect(written.verdict).toBe('duplicates');
    expect(written.effects).toBeGreaterThan(1);
  });

  it('says apart "no effect seen" (exit 3) from duplicates (exit 1)', async () => {
    const r = await probe('PO-8', nothing);
    expect(r.stdout).toMatch(/no effect seen/);
    expect(r.code).toBe(3);
  });

  it('--json prints the receipt as JSON, with the same exit code', async () => {
    const r = await probe('PO-9', [...nothing, '--json']);
    expect(JSON.parse(r.stdout)).toMatchObject({ verdict: 'no-effect-seen', effects: 0 });
    expect(r.code).toBe(3);
  });

  it('refuses bad JSON in one line, exit 2', async () => {
    const r = await bare('--args', '[1', '--', orders);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--args must be a JSON object/);
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('a probe that could not run (no server, an upstream that exits, no list to count) exits 2, never 1, in one line', async () => {
    const runs = [
      await bare('--', '/nonexistent/upstream-server'),
      await bare('--', process.execPath, '-e', 'process.exit(7)'),
      await probe('PO-10', ['--count-path', 'nowhere']),
    ];
    for (const r of runs) {
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.code).toBe(2);
    }
    expect(runs[1]?.stderr).toMatch(/exited with code 7/);
  });

  it('a probe that could not run says what went wrong, without the --help hint meant for a wrong command line', async () => {
    const runs = [
      await bare('--', process.execPath, '-e', 'process.exit(7)'),
      await probe('PO-12', ['--count-path', 'nowhere']),
      await probe('PO-13', ['--count-tool', 'list_ordrs']),
    ];
    for (const r of runs) expect(r.stderr).not.toContain('--help');
    // A read tool that answers an error (here: it does not exist) is named with its answer, not as "no list".
    expect(runs[2]?.stderr).toMatch(/^retrysafe: list_ordrs answered an error: unknown tool list_ordrs$/m);
    expect((await bare('--args', '[1', '--', orders)).stderr).toContain('(run with --help for usage)');
  });

  it('no effect seen where no call succeeded says so, rather than asking whether the read tool lists the effects', async () => {
    const r = await probe('PO-11', ['--tool', 'create_ordr']);
    expect(r.stdout).toMatch(/^no effect seen: none of the 5 calls to create_ordr succeeded/);
    expect(r.stdout).not.toContain('does list_orders list');
    expect(r.code).toBe(3);
  });
});
