import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type StripeSandbox, startStripeSandbox } from '@retrysafe/stripe/sandbox';
import { afterEach, describe, expect, it } from 'vitest';
import { writeJson } from './child-helpers.js';

// `retrysafe-mcp --http` as a user starts it: the token is generated and printed unless
// RETRYSAFE_MCP_TOKEN is set; without it the real MCP client is refused and nothing is created.
const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const children: ChildProcess[] = [];
const sandboxes: StripeSandbox[] = [];
const dirs: string[] = [];
afterEach(async () => {
  // The server writes its ledger into the dir: remove it once the process has exited.
  await Promise.all(
    children.splice(0).map((c) =>
      c.exitCode !== null || c.signalCode !== null
        ? undefined
        : new Promise((resolve) => {
            c.once('exit', resolve);
            c.kill();
          }),
    ),
  );
  for (const s of sandboxes.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(
  env: Record<string, string> = {},
): Promise<{ url: string; token: string | null; sandbox: StripeSandbox; stderr: () => string }> {
  const sandbox = await startStripeSandbox({ port: 0 });
  sandboxes.push(sandbox);
  const dir = mkdtempSync(join(tmpdir(), 'retrysafe-mcp-http-'));
  dirs.push(dir);
  const config = writeJson(dir, 'retrysafe.json', {
    ledger: './ledger.db',
    adapters: { stripe: { apiKeyEnv: 'RS_STRIPE_KEY', baseUrl: sandbox.url, timeoutMs: 2000 } },
    operations: ['stripe.customers.create'],
  });
  const child = spawn(process.execPath, [bin, '--config', config, '--http'], {
    env: { PATH: process.env.PATH ?? '', RS_STRIPE_KEY: 'sk_test_mcp_bin', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  children.push(child);
  let err = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on('data', (d) => {
      err += String(d);
      if (/bearer token/.test(err) && /\n[^\n]*bearer token[^\n]*\n/.test(err)) resolve();
    });
    child.on('exit', (code) => reject(new Error(`retrysafe-mcp exited ${code}: ${err}`)));
  });
  const url = /on (http:\/\/\S+)/.exec(err)![1]!;
  const token = /Bearer <token>"\): (\S+)/.exec(err)?.[1] ?? null;
  return { url, token, sandbox, stderr: () => err };
}

describe('retrysafe-mcp --http (the bin)', () => {
  it('prints a generated token; the real MCP client needs it; a call with it creates one customer', async () => {
    const h = await start();
    expect(h.token).toMatch(/^[A-Za-z0-9_-]{40,}$/);
    const refused = new Client({ name: 'no-token', version: '1' });
    await expect(refused.connect(new StreamableHTTPClientTransport(new URL(h.url)))).rejects.toThrow();
    const wrong = new Client({ name: 'wrong-token', version: '1' });
    await expect(
      wrong.connect(
        new StreamableHTTPClientTransport(new URL(h.url), {
          requestInit: { headers: { authorization: 'Bearer not-the-token-at-all-000' } },
        }),
      ),
    ).rejects.toThrow();
    expect(h.sandbox.count('customers.create')).toBe(0);
    const client = new Client({ name: 'agent', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(h.url), {
        requestInit: { headers: { authorization: `Bearer ${h.token}` } },
      }),
    );
    const r = (
      await client.callTool({
        name: 'stripe_customers_create',
        arguments: { customerRef: 'bin-1', email: 'bin1@example.test' },
      })
    ).structuredContent as { status: string };
    expect(r.status).toBe('done');
    expect(h.sandbox.count('customers.create')).toBe(1);
    await client.close();
  });

  it('takes the token from RETRYSAFE_MCP_TOKEN and never prints it', async () => {
    const TOKEN = 'configured-token-0123456789';
    const h = await start({ RETRYSAFE_MCP_TOKEN: TOKEN });
    expect(h.token).toBeNull();
    expect(h.stderr()).not.toContain(TOKEN);
    const client = new Client({ name: 'agent', version: '1' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(h.url), {
        requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
      }),
    );
    expect((await client.listTools()).tools.length).toBe(3);
    await client.close();
  });
});
