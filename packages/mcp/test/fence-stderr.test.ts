/**
 * What `retrysafe-mcp wrap` prints on stderr is a log: the upstream's own stderr, which it relays, and the line that
 * says why it stopped, which may quote the upstream's answer. A credential or an email address in either is blanked,
 * as in receipts.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { bin, onCleanup, tempDir, writeFence } from './child-helpers.js';

const fence = () =>
  writeFence(tempDir('retrysafe-fence-stderr-'), {
    name: 'orders',
    tools: { create_order: { kind: 'create', intent: ['ref'] } },
  });

/** Runs `retrysafe-mcp wrap` to its end; its exit code and stderr. */
function wrap(...args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, 'wrap', '--config', fence(), ...args], {
      env: { PATH: process.env.PATH ?? '' },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

const KEY = 'sk_live_51Hq9ZsUpStReAmKeY0xyz';
const ADDRESS = 'ops.lead@acme.example';
const PEM_BODY = ['MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj', 'MqZtPrIvAtEkEyLiNe2xYzAbCdEf'];

describe("retrysafe-mcp wrap's stderr", () => {
  it("relays the upstream's stderr with a credential, an email address and a private key's lines blanked", {
    timeout: 30_000,
  }, async () => {
    // A private key printed as it is stored spans lines, which are relayed one by one.
    const pem = ['-----BEGIN PRIVATE KEY-----', ...PEM_BODY, '-----END PRIVATE KEY-----'].join('\\n');
    const script = `process.stderr.write("login failed for ${ADDRESS} with password=hunter2-upstream and ${KEY}\\nloaded key:\\n${pem}\\nlistening\\n"); process.exit(1)`;
    const r = await wrap('--', process.execPath, '-e', script);
    expect(r.status).toBe(2); // an upstream that cannot be started is a bad setup
    expect(r.stderr).toContain('login failed for');
    expect(r.stderr).toContain('listening');
    for (const leak of ['hunter2-upstream', ADDRESS, KEY, ...PEM_BODY]) expect(r.stderr).not.toContain(leak);
  });

  it("blanks them in the line that says why it stopped, which quotes the upstream's answer", {
    timeout: 30_000,
  }, async () => {
    const server = createServer((_req, res) => {
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: `key ${KEY} of ${ADDRESS} is revoked` }));
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    onCleanup(() => new Promise((ok) => server.close(ok)));
    const { port } = server.address() as AddressInfo;
    const r = await wrap('--url', `http://127.0.0.1:${port}/mcp`);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('is revoked');
    for (const leak of [ADDRESS, KEY]) expect(r.stderr).not.toContain(leak);
  });
});
