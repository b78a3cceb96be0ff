// Issue 40 item 6: files the CLI reads (configs, card files, --resend-with params) have limits; over one, exit 2 naming it.
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cli, tempDir } from './helpers.js';

const dir = tempDir('limits');

/** A file of `mb` megabytes starting with `head`, padded with comment-like filler (written in chunks). */
function big(name: string, head: string, mb: number): string {
  const file = join(dir, name);
  const fd = openSync(file, 'w');
  writeSync(fd, head);
  const chunk = `# ${'x'.repeat(1021)}\n`.repeat(1024);
  for (let i = 0; i < mb; i++) writeSync(fd, chunk);
  closeSync(fd);
  return file;
}

describe('file limits in the CLI', () => {
  it('ledger ls --config <a 50 MB YAML file>: exit 2, naming the limit', async () => {
    const config = big(
      'retrysafe.yaml',
      'ledger: ./retrysafe.db\nadapters:\n  sandbox: { baseUrl: "http://127.0.0.1:9" }\n',
      50,
    );
    const r = await cli(['ledger', 'ls', '--config', config, '--json'], { timeoutMs: 30_000 });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout)).toMatchObject({
      ok: false,
      error: { code: 'USAGE', message: expect.stringMatching(/over the limit maxBytes = 1048576/) },
    });
  });

  it('cards validate <a card nested too deep>: exit 2, naming the limit', async () => {
    const card = join(dir, 'deep.json');
    writeFileSync(card, `${'{"a":'.repeat(100)}1${'}'.repeat(100)}`);
    const r = await cli(['cards', 'validate', card, '--json'], { timeoutMs: 30_000 });
    expect(r.code).toBe(2);
    expect(JSON.parse(r.stdout).results[0].problems[0].message).toMatch(/over the limit maxDepth = 64/);
  });

  it('ledger resolve --resend-with <a params file over the size limit>: exit 2 before anything is opened', async () => {
    const params = big('params.json', '', 2);
    const r = await cli(['ledger', 'resolve', 'op-1', '--resend-with', params, '--config', join(dir, 'unread.json')], {
      timeoutMs: 30_000,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/params\.json: the file has \d+ bytes, over the limit maxBytes/);
  });
});
