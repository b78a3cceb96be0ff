// .ci/start-postgres.sh on a machine shared by several runs: each run gets its own server (free port,
// private folder), a run never stops a server it did not start, and each server stops when the shell
// that sourced the script exits.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { repoRoot } from '../scripts/workspace.mjs';

const startScript = join(repoRoot, '.ci/start-postgres.sh');
const stopScript = join(repoRoot, '.ci/stop-postgres.sh');

interface Started {
  url: string;
  dir: string;
  answer: string;
}

/** Sources the script in a bash that prints what it got and then waits until `release()` closes its stdin. */
function startInShell(): { started: Promise<Started>; release: () => void; exited: Promise<number | null> } {
  const script = `source ${JSON.stringify(startScript)} >/dev/null || exit 1
echo "$DATABASE_URL $RETRYSAFE_PG_DIR $(psql "$DATABASE_URL" -tAc 'select 40 + 2')"
cat >/dev/null`;
  const child = spawn('bash', ['-c', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const started = new Promise<Started>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (!out.includes('\n')) return;
      const [url = '', dir = '', answer = ''] = out.trim().split(' ');
      resolve({ url, dir, answer });
    });
    child.on('exit', (code) => reject(new Error(`start-postgres.sh exited ${code} before printing: ${out}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { started, release: () => child.stdin.end(), exited };
}

function answers(url: string): boolean {
  return spawnSync('psql', [url, '-tAc', 'select 1'], { encoding: 'utf8' }).stdout.trim() === '1';
}

async function gone(dir: string): Promise<boolean> {
  for (let i = 0; i < 60 && existsSync(dir); i++) await sleep(500);
  return !existsSync(dir);
}

it('two runs at once get two servers, and each stops only its own when its shell exits', async () => {
  const a = startInShell();
  const b = startInShell();
  const [sa, sb] = await Promise.all([a.started, b.started]);
  expect(sa.answer).toBe('42');
  expect(sb.answer).toBe('42');
  expect(new URL(sa.url).port).not.toBe(new URL(sb.url).port);
  expect(sa.dir).not.toBe(sb.dir);

  b.release();
  expect(await b.exited).toBe(0);
  expect(await gone(sb.dir)).toBe(true);
  expect(answers(sb.url)).toBe(false);
  // B's exit left A's server alone.
  expect(answers(sa.url)).toBe(true);

  a.release();
  expect(await a.exited).toBe(0);
  expect(await gone(sa.dir)).toBe(true);
  expect(answers(sa.url)).toBe(false);
}, 120_000);

it('stop-postgres.sh leaves a folder it did not start alone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'not-ours-'));
  writeFileSync(join(dir, 'postmaster.pid'), '1\n');
  try {
    const r = spawnSync(stopScript, [dir], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('was not started by .ci/start-postgres.sh');
    expect(existsSync(join(dir, 'postmaster.pid'))).toBe(true);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
