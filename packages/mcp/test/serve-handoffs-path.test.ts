// The config's relative paths are read next to the config file, whatever directory the server starts in:
// an MCP host that launches `retrysafe-mcp --config /srv/rs/retrysafe.json` from / must append handoff
// packets where the operator's file is, as the fence file's `handoffs` already is.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createSandboxProvider, REPLAYING_BEHAVIOUR, startSandboxServer } from '@retrysafe/sandbox';
import { afterAll, expect, it } from 'vitest';
import { writeJson } from './child-helpers.js';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const dirs: string[] = [];
const tempDir = (prefix: string) => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

it('retrysafe-mcp --config: handoffs is a path next to the config file, as the ledger is, not in the working directory', async () => {
  const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
  const server = await startSandboxServer({ provider });
  const home = tempDir('retrysafe-serve-home-');
  const elsewhere = tempDir('retrysafe-serve-cwd-');
  const config = writeJson(home, 'retrysafe.json', {
    ledger: './ledger.db',
    handoffs: './handoffs.jsonl',
    adapters: { sandbox: { baseUrl: server.url } },
  });
  const client = new Client({ name: 'scripted-agent', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [bin, '--config', config],
      cwd: elsewhere,
      env: { PATH: process.env.PATH ?? '' },
    }),
  );
  try {
    provider.failNext({ kind: 'rejected', message: 'ref is not allowed' });
    const r = await client.callTool({ name: 'sandbox_records_create', arguments: { ref: 'h-1' } });
    expect(r.structuredContent).toMatchObject({ status: 'needs-human' });
    expect(existsSync(join(home, 'ledger.db'))).toBe(true);
    expect(existsSync(join(elsewhere, 'handoffs.jsonl'))).toBe(false);
    expect(readFileSync(join(home, 'handoffs.jsonl'), 'utf8')).toMatch(/"reason":"rejected"/);
  } finally {
    await client.close();
    await server.close();
  }
}, 60_000);
