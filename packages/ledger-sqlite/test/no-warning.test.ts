// The embedded ledger is the default of the CLI and the MCP server: opening it prints nothing on stderr
// (Node 22 announces node:sqlite with an ExperimentalWarning), and the package loads no SQLite until a
// ledger is opened.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const entry = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-warning-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `body` (an ES module's text, `createSqliteLedger` in scope) in a fresh Node process. */
function run(body: string) {
  const env = { ...process.env };
  delete env.NODE_NO_WARNINGS;
  delete env.NODE_OPTIONS;
  const script = `import { createSqliteLedger } from ${JSON.stringify(entry)};\nvoid createSqliteLedger;\n${body}`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env });
}

describe('loading node:sqlite', () => {
  it('opening a ledger and writing to it prints nothing on stderr; other warnings still do', () => {
    const path = join(dir, 'quiet.db');
    const r = run(`const l = createSqliteLedger({ path: ${JSON.stringify(path)} });
await l.claim({ businessOperationId: 'q-1', provider: 'p', operation: 'p.op', intentFingerprint: 'i', paramsFingerprint: 'f', params: {}, providerKey: null, owner: 'w', leaseMs: 1000, now: 1 });
await l.close();
process.emitWarning('still shown', 'ExperimentalWarning');`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/SQLite/);
    expect(r.stderr).toMatch(/still shown/);
  });

  it('a Node without node:sqlite (before 22.13) is told so by name, not with a TypeError', () => {
    const r = run(`process.getBuiltinModule = () => undefined;
try { createSqliteLedger({ path: ${JSON.stringify(join(dir, 'old-node.db'))} }); } catch (e) { console.log(e.name, e.message); }`);
    expect(r.stdout.trim(), r.stderr).toBe(
      `LedgerError cannot open SQLite ledger at ${join(dir, 'old-node.db')}: node:sqlite is not in Node ${process.version}: the SQLite ledger needs Node 22.13 or later`,
    );
  });

  it('importing the package loads no SQLite', () => {
    const r = run(`console.log(process.moduleLoadList.some((m) => m.includes('sqlite')));`);
    expect(r.stdout.trim(), r.stderr).toBe('false');
  });
});
